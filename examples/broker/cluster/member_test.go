package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGoAfterClose: a goroutine asked of a membership that is closing or
// closed is not started (Close has waited for its goroutines already, and
// a WaitGroup must not grow while it is waited on): f runs at once, on the
// caller's goroutine, with a context already done, so that what it sends
// fails at once (a produce's KIP-890 check answered during a shutdown).
func TestGoAfterClose(t *testing.T) {
	m, err := New(Config{Brokers: Single(Node{ID: 1, Host: "127.0.0.1", Port: 9092})})
	require.NoError(t, err)
	require.NoError(t, m.Close(context.Background(), false))
	ran := false
	m.Go(func(ctx context.Context) {
		ran = true
		assert.Error(t, ctx.Err(), "the membership's context is done")
	})
	assert.True(t, ran, "run before Go returns")
}
