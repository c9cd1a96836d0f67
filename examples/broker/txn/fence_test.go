package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestInitProducerIDFencesOngoing: an InitProducerID that finds a
// transaction under way aborts it at a bumped epoch (PrepareEpochFence,
// then PrepareAbort and its markers, then CompleteAbort) and answers
// CONCURRENT_TRANSACTIONS; the old producer is fenced; the retry bumps the
// epoch again.
func TestInitProducerIDFencesOngoing(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0), tp("t", 1))

	e.log.setHold(true)
	a := e.init("tx", -1, -1)
	assert.Zero(t, a.n(), "answered once the abort is written")
	d := e.describe(t, "tx")
	assert.Equal(t, Ongoing, d.State, "the log says Ongoing until the abort is written")
	assert.Equal(t, epoch+1, d.ProducerEpoch, "the fence's epoch is in effect at once")
	assert.Equal(t, kerr.ProducerFenced, e.add("tx", pid, epoch, tp("t", 2)).one(t), "the old producer is fenced")
	assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err, "the fence is pending")
	e.log.setHold(false)
	e.log.release(nil)
	assert.Equal(t, initResult{-1, -1, kerr.ConcurrentTransactions}, a.one(t))

	calls := e.markers.all()
	require.Len(t, calls, 1)
	assert.Equal(t, Marker{ProducerID: pid, ProducerEpoch: epoch + 1, CoordinatorEpoch: testEpoch}, calls[0].m, "an abort at the bumped epoch")
	assert.Equal(t, []TopicPartition{tp("t", 0), tp("t", 1)}, calls[0].parts)
	assert.Equal(t, []string{"Empty", "Ongoing", "PrepareAbort", "CompleteAbort"}, e.log.states(t, "tx"))
	assert.Equal(t, epoch+1, e.log.last(t, "tx").epoch)

	assert.Equal(t, kerr.ProducerFenced, e.end("tx", pid, epoch, true).one(t), "the old producer's commit")
	assert.Equal(t, initResult{pid: pid, epoch: epoch + 2}, e.init("tx", -1, -1).one(t), "the retry")
}

// TestFenceWriteFails: a fence whose abort cannot be written leaves the
// epoch bumped in memory (the old producer stays fenced) and the
// transaction Ongoing; the next fence does not bump it again, as Kafka's
// hasFailedEpochFence.
func TestFenceWriteFails(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.log.setRefuse(kerr.CoordinatorNotAvailable)
	assert.Equal(t, kerr.CoordinatorNotAvailable, e.init("tx", -1, -1).one(t).err)
	d := e.describe(t, "tx")
	assert.Equal(t, Ongoing, d.State)
	assert.Equal(t, epoch+1, d.ProducerEpoch)
	assert.Equal(t, kerr.ProducerFenced, e.end("tx", pid, epoch, true).one(t))

	e.log.setRefuse(nil)
	assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err)
	assert.Equal(t, epoch+1, e.log.last(t, "tx").epoch, "bumped once, not twice")
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
	assert.Equal(t, initResult{pid: pid, epoch: epoch + 2}, e.init("tx", -1, -1).one(t))
}

// TestTimeoutAbortsAndFences: a transaction Ongoing past its timeout is
// aborted by the coordinator at a bumped epoch, on the timer: its producer
// is fenced.
func TestTimeoutAbortsAndFences(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.clk.Advance(testTimeout / 2)
	require.Nil(t, e.add("tx", pid, epoch, tp("t", 1)).one(t), "more partitions do not restart the count")
	e.clk.Advance(testTimeout/2 - time.Millisecond)
	assert.Equal(t, Ongoing, e.describe(t, "tx").State, "not before the timeout")
	assert.Empty(t, e.markers.all())

	e.clk.Advance(time.Millisecond)
	d := e.describe(t, "tx")
	assert.Equal(t, CompleteAbort, d.State)
	assert.Equal(t, epoch+1, d.ProducerEpoch)
	calls := e.markers.all()
	require.Len(t, calls, 1)
	assert.Equal(t, Marker{ProducerID: pid, ProducerEpoch: epoch + 1, CoordinatorEpoch: testEpoch}, calls[0].m)
	assert.Equal(t, kerr.ProducerFenced, e.add("tx", pid, epoch, tp("t", 0)).one(t))
	assert.Equal(t, kerr.ProducerFenced, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, kerr.ProducerFenced, e.c.VerifyPartitions("tx", pid, epoch, []TopicPartition{tp("t", 0)})[tp("t", 0)])
}

// TestTimeoutCancelledByEnd: a transaction ended before its timeout is
// not aborted; the next one has a timeout of its own, from its start.
func TestTimeoutCancelledByEnd(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.clk.Advance(testTimeout - time.Second)
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	require.Nil(t, e.add("tx", pid, epoch, tp("t", 0)).one(t))
	e.clk.Advance(testTimeout - time.Millisecond)
	assert.Equal(t, Ongoing, e.describe(t, "tx").State, "the second transaction's own timeout")
	assert.Len(t, e.markers.all(), 1, "the commit's markers only")
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
}

// TestTimeoutDuringWrite: a transaction that times out while a write of
// it is under way is aborted once the write ends.
func TestTimeoutDuringWrite(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.log.setHold(true)
	a := e.add("tx", pid, epoch, tp("t", 1))
	e.clk.Advance(testTimeout)
	assert.Equal(t, Ongoing, e.describe(t, "tx").State, "not while the write is pending")
	e.log.setHold(false)
	e.log.release(nil)
	require.Nil(t, a.one(t))
	e.clk.Advance(soon)
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
}

// TestTimeoutAbortRetried: a timed-out transaction whose abort cannot be
// written is tried again after the backoff, not in a loop, and bumped
// once.
func TestTimeoutAbortRetried(t *testing.T) {
	e := newEnv(t, 0)
	_, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.log.setRefuse(kerr.CoordinatorNotAvailable)
	before := e.log.appends(0)
	e.clk.Advance(testTimeout + DefaultRetryBackoff/2)
	assert.Equal(t, before, e.log.appends(0))
	assert.Equal(t, Ongoing, e.describe(t, "tx").State)
	e.log.setRefuse(nil)
	e.clk.Advance(DefaultRetryBackoff)
	d := e.describe(t, "tx")
	assert.Equal(t, CompleteAbort, d.State)
	assert.Equal(t, epoch+1, d.ProducerEpoch, "bumped once")
}
