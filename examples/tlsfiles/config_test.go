package tlsfiles

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handshake runs a TLS handshake between a server of srv and a client of
// cli over loopback TCP, and returns what each side saw of the other. The
// client reads once after its handshake: under TLS 1.3 the server judges
// the client's certificate after the client is done, and says so in an
// alert.
func handshake(t *testing.T, srv, cli *tls.Config) (server, client tls.ConnectionState, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	type result struct {
		st  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer nc.Close()
		s := tls.Server(nc, srv)
		err = s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1}) // the client's read below
		}
		done <- result{s.ConnectionState(), err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	c := tls.Client(nc, cli)
	err = c.Handshake()
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	if err != nil {
		_ = nc.Close()
	}
	r := <-done
	if err == nil {
		err = r.err
	}
	return r.st, c.ConnectionState(), err
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// TestRotation: a keystore replaced is served from the first handshake
// after the next check, without a restart; a broken replacement keeps the
// last good certificate.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test CA")
	require.NoError(t, err)
	first, err := ca.Issue(pkix.Name{CommonName: "broker-1"}, "127.0.0.1")
	require.NoError(t, err)
	f := Files{Keystore: write(t, dir, "broker.pem", first), Truststore: write(t, dir, "ca.pem", ca.PEM)}
	srv, r, err := serverConfig(f, nil)
	require.NoError(t, err)
	now := time.Now()
	r.now = func() time.Time { return now }
	cli, err := ClientConfig(Files{Truststore: f.Truststore})
	require.NoError(t, err)
	cli.ServerName = "127.0.0.1"

	_, seen, err := handshake(t, srv, cli)
	require.NoError(t, err)
	assert.Equal(t, "broker-1", seen.PeerCertificates[0].Subject.CommonName)

	second, err := ca.Issue(pkix.Name{CommonName: "broker-1-rotated"}, "127.0.0.1")
	require.NoError(t, err)
	write(t, dir, "broker.pem", second)
	_, seen, err = handshake(t, srv, cli)
	require.NoError(t, err)
	assert.Equal(t, "broker-1", seen.PeerCertificates[0].Subject.CommonName, "not looked at again within a second")

	now = now.Add(reloadCheck)
	_, seen, err = handshake(t, srv, cli)
	require.NoError(t, err)
	assert.Equal(t, "broker-1-rotated", seen.PeerCertificates[0].Subject.CommonName)

	write(t, dir, "broker.pem", []byte("not PEM"))
	now = now.Add(reloadCheck)
	_, seen, err = handshake(t, srv, cli)
	require.NoError(t, err)
	assert.Equal(t, "broker-1-rotated", seen.PeerCertificates[0].Subject.CommonName, "the last good one")
}

// TestClientAuth: with ssl.client.auth required, a client without a
// certificate is refused, and one with a certificate of the CA is seen
// with its subject; a certificate of another CA is refused.
func TestClientAuth(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test CA")
	require.NoError(t, err)
	ks, err := ca.Issue(pkix.Name{CommonName: "broker"}, "127.0.0.1")
	require.NoError(t, err)
	srv, err := ServerConfig(Files{Keystore: write(t, dir, "b.pem", ks), Truststore: write(t, dir, "ca.pem", ca.PEM),
		ClientAuth: "required"}, nil)
	require.NoError(t, err)

	alice, err := ca.Issue(pkix.Name{CommonName: "alice", Organization: []string{"purgatory"}})
	require.NoError(t, err)
	other, err := NewCA("other CA")
	require.NoError(t, err)
	mallory, err := other.Issue(pkix.Name{CommonName: "mallory"})
	require.NoError(t, err)

	for _, tc := range []struct {
		name, keystore string
		want           string // the subject the server sees; "" for a refusal
	}{
		{"no certificate", "", ""},
		{"the CA's", write(t, dir, "alice.pem", alice), "CN=alice,O=purgatory"},
		{"another CA's", write(t, dir, "mallory.pem", mallory), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, err := ClientConfig(Files{Truststore: filepath.Join(dir, "ca.pem"), Keystore: tc.keystore})
			require.NoError(t, err)
			cli.ServerName = "127.0.0.1"
			seen, _, err := handshake(t, srv, cli)
			if tc.want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, seen.PeerCertificates[0].Subject.String())
		})
	}
}

func TestBadSettings(t *testing.T) {
	dir := t.TempDir()
	_, err := ServerConfig(Files{}, nil)
	assert.ErrorContains(t, err, "ssl.keystore.location")
	_, err = ServerConfig(Files{Keystore: write(t, dir, "x.pem", []byte("x")), ClientAuth: "always"}, nil)
	assert.ErrorContains(t, err, "ssl.client.auth")
	_, err = ServerConfig(Files{Keystore: write(t, dir, "x.pem", []byte("x")), ClientAuth: "required"}, nil)
	assert.ErrorContains(t, err, "ssl.truststore.location")
	_, err = ServerConfig(Files{Keystore: write(t, dir, "x.pem", []byte("x"))}, nil)
	assert.ErrorContains(t, err, "ssl.keystore.location")
	_, err = ClientConfig(Files{Truststore: write(t, dir, "x.pem", []byte("x"))})
	assert.ErrorContains(t, err, "no PEM certificate")
}
