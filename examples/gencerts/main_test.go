package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// TestGencerts: the files it writes make a server configuration that
// requires client certificates, and a client's.
func TestGencerts(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run([]string{"--dir", dir, "--clients", "alice,bob"}))
	for _, f := range []string{"ca.pem", "server.pem", "alice.pem", "bob.pem"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
	_, err := tlsfiles.ServerConfig(tlsfiles.Files{Keystore: filepath.Join(dir, "server.pem"),
		Truststore: filepath.Join(dir, "ca.pem"), ClientAuth: "required"}, nil)
	require.NoError(t, err)
	_, err = tlsfiles.ClientConfig(tlsfiles.Files{Keystore: filepath.Join(dir, "alice.pem"), Truststore: filepath.Join(dir, "ca.pem")})
	require.NoError(t, err)
	assert.Error(t, run([]string{"--nope"}))
}
