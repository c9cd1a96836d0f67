package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAddPartitionsWaitsForTheCompletion: with a CompletionWait, an
// AddPartitions that finds the producer's previous transaction still
// completing (its markers being written) waits in the TxnCompletion
// purgatory instead of being answered CONCURRENT_TRANSACTIONS, and starts
// the next transaction as soon as the completion is written; one that
// waits past CompletionWait is answered CONCURRENT_TRANSACTIONS, which
// the client retries.
func TestAddPartitionsWaitsForTheCompletion(t *testing.T) {
	e := newEnv(t, 0, func(cfg *Config) { cfg.CompletionWait = time.Second })
	e.markers.setAuto(nil) // held
	pid, epoch := e.ongoing(t, "tx", tp("a", 0))
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))

	next := e.add("tx", pid, epoch, tp("b", 0))
	assert.Zero(t, next.n(), "waits while the markers are written")
	e.markers.answer(written)
	require.Nil(t, next.one(t), "answered once the completion is written")
	d := e.describe(t, "tx")
	assert.Equal(t, Ongoing, d.State, "the next transaction began")
	assert.Equal(t, []TopicPartition{tp("b", 0)}, d.Partitions)
	assert.Equal(t, []string{"Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing"}, e.log.states(t, "tx"))

	require.Nil(t, e.end("tx", pid, epoch, false).one(t))
	late := e.add("tx", pid, epoch, tp("c", 0))
	e.clk.Advance(999 * time.Millisecond)
	assert.Zero(t, late.n())
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, kerr.ConcurrentTransactions, late.one(t), "past CompletionWait")
	e.markers.answer(written)
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
}
