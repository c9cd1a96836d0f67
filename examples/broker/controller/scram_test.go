package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

func credential(t *testing.T, mechanism, password string) *sasl.Credential {
	t.Helper()
	c, err := sasl.NewCredential(mechanism, password, 0)
	require.NoError(t, err)
	return &c
}

// TestCreateScramMakesACredentialOnce: the --add-scram credentials that
// every broker of a cluster is started with are made once, by whichever
// broker's controller commits them first. Each broker derives its own
// (a salt of its own), from an image that may predate a commit of
// another's; CreateScram, deciding on the controller's image, commits
// only the credentials absent there and leaves a committed one as it is,
// so that every broker authenticates with the same credential and none
// changes under a client.
func TestCreateScramMakesACredentialOnce(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	first := credential(t, sasl.ScramSHA512, "kgo-secret")
	created, err := c.CreateScram(ctx, []metadata.ScramChange{{User: "kgo", Mechanism: sasl.ScramSHA512, Credential: first}})
	require.NoError(t, err)
	assert.Equal(t, 1, created)

	// Another broker's, derived before it saw the first: only its
	// SCRAM-SHA-256 credential is new.
	second := credential(t, sasl.ScramSHA512, "kgo-secret")
	sha256 := credential(t, sasl.ScramSHA256, "kgo-secret")
	index := log.Image().Index
	created, err = c.CreateScram(ctx, []metadata.ScramChange{
		{User: "kgo", Mechanism: sasl.ScramSHA512, Credential: second},
		{User: "kgo", Mechanism: sasl.ScramSHA256, Credential: sha256},
	})
	require.NoError(t, err)
	assert.Equal(t, 1, created)
	got, ok := log.Image().Credential("kgo", sasl.ScramSHA512)
	require.True(t, ok)
	assert.Equal(t, first.Salt, got.Salt, "the committed credential is kept")
	got, ok = log.Image().Credential("kgo", sasl.ScramSHA256)
	require.True(t, ok)
	assert.Equal(t, sha256.Salt, got.Salt, "the absent one is created")
	assert.Greater(t, log.Image().Index, index)

	// All of them there: nothing is committed.
	index = log.Image().Index
	again := credential(t, sasl.ScramSHA256, "kgo-secret")
	created, err = c.CreateScram(ctx, []metadata.ScramChange{{User: "kgo", Mechanism: sasl.ScramSHA256, Credential: again}})
	require.NoError(t, err)
	assert.Zero(t, created)
	assert.Equal(t, index, log.Image().Index, "nothing committed")
}
