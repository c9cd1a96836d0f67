package txn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEndTxnCommit: an Ongoing transaction's commit is answered once its
// PrepareCommit is written; then the markers go to every partition, at
// the coordinator epoch the partition was loaded at, and CompleteCommit is
// written once they all are. Meanwhile the id is PrepareCommit and its
// requests CONCURRENT_TRANSACTIONS.
func TestEndTxnCommit(t *testing.T) {
	e := newEnv(t, 0)
	e.markers.setAuto(nil) // held
	pid, epoch := e.ongoing(t, "tx", tp("b", 1), tp("a", 0))

	e.log.setHold(true)
	a := e.end("tx", pid, epoch, true)
	assert.Zero(t, a.n(), "not answered before PrepareCommit is written")
	assert.Empty(t, e.markers.all(), "no marker before PrepareCommit is written")
	e.log.release(nil)
	require.Nil(t, a.one(t))
	e.log.setHold(false)

	calls := e.markers.all()
	require.Len(t, calls, 1)
	assert.Equal(t, Marker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: testEpoch, Commit: true}, calls[0].m)
	assert.Equal(t, []TopicPartition{tp("a", 0), tp("b", 1)}, calls[0].parts)
	d := e.describe(t, "tx")
	assert.Equal(t, PrepareCommit, d.State)
	assert.Equal(t, []TopicPartition{tp("a", 0), tp("b", 1)}, d.Partitions)
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("tx", pid, epoch, tp("a", 0)).one(t))
	assert.Equal(t, kerr.ConcurrentTransactions, e.end("tx", pid, epoch, true).one(t), "a retry")
	assert.Equal(t, kerr.ConcurrentTransactions, e.end("tx", pid, epoch, false).one(t), "the other way")
	assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err)

	e.markers.answer(written)
	d = e.describe(t, "tx")
	assert.Equal(t, CompleteCommit, d.State)
	assert.Empty(t, d.Partitions, "cleared")
	assert.Equal(t, []string{"Empty", "Ongoing", "PrepareCommit", "CompleteCommit"}, e.log.states(t, "tx"))
	assert.Nil(t, e.end("tx", pid, epoch, true).one(t), "a retry of the commit succeeds")
}

// TestEndTxnStates: EndTxn from every state, both ways, as Kafka's
// transaction version 1 answers it.
func TestEndTxnStates(t *testing.T) {
	setups := map[State]func(t *testing.T, e *env) (int64, int16){
		Empty: func(t *testing.T, e *env) (int64, int16) { return e.initNow(t, "tx") },
		Ongoing: func(t *testing.T, e *env) (int64, int16) {
			return e.ongoing(t, "tx", tp("t", 0))
		},
		CompleteCommit: func(t *testing.T, e *env) (int64, int16) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			require.Nil(t, e.end("tx", pid, epoch, true).one(t))
			return pid, epoch
		},
		CompleteAbort: func(t *testing.T, e *env) (int64, int16) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			require.Nil(t, e.end("tx", pid, epoch, false).one(t))
			return pid, epoch
		},
		PrepareCommit: func(t *testing.T, e *env) (int64, int16) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			e.markers.setAuto(nil)
			require.Nil(t, e.end("tx", pid, epoch, true).one(t))
			return pid, epoch
		},
		PrepareAbort: func(t *testing.T, e *env) (int64, int16) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			e.markers.setAuto(nil)
			require.Nil(t, e.end("tx", pid, epoch, false).one(t))
			return pid, epoch
		},
	}
	for _, tt := range []struct {
		from   State
		commit bool
		want   *kerr.Error
	}{
		{Empty, true, kerr.InvalidTxnState},
		{Empty, false, kerr.InvalidTxnState}, // transaction version 2 would allow it
		{Ongoing, true, nil},
		{Ongoing, false, nil},
		{CompleteCommit, true, nil},
		{CompleteCommit, false, kerr.InvalidTxnState},
		{CompleteAbort, false, nil},
		{CompleteAbort, true, kerr.InvalidTxnState},
		{PrepareCommit, true, kerr.ConcurrentTransactions},
		{PrepareCommit, false, kerr.ConcurrentTransactions}, // its completion is pending
		{PrepareAbort, false, kerr.ConcurrentTransactions},
		{PrepareAbort, true, kerr.ConcurrentTransactions},
	} {
		t.Run(fmt.Sprintf("%s commit=%v", tt.from, tt.commit), func(t *testing.T) {
			e := newEnv(t, 0)
			pid, epoch := setups[tt.from](t, e)
			require.Equal(t, tt.from, e.describe(t, "tx").State)
			assert.Equal(t, tt.want, e.end("tx", pid, epoch, tt.commit).one(t))
		})
	}
}

// TestEndTxnPrepareWithoutMarkers: a Prepare state whose completion is
// not pending (never, but for safety) answers a retry
// CONCURRENT_TRANSACTIONS and the other way INVALID_TXN_STATE, as Kafka.
func TestEndTxnPrepareWithoutMarkers(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	tx, _ := e.c.lockTxn("tx")
	tx.meta.state = PrepareCommit
	tx.mu.Unlock()
	assert.Equal(t, kerr.ConcurrentTransactions, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, kerr.InvalidTxnState, e.end("tx", pid, epoch, false).one(t))
}

// TestEndTxnMismatch: EndTxn of an unknown id, another producer id or
// another epoch.
func TestEndTxnMismatch(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.end("nope", pid, epoch, true).one(t))
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.end("tx", pid+1, epoch, true).one(t))
	assert.Equal(t, kerr.ProducerFenced, e.end("tx", pid, epoch+1, true).one(t))
	assert.Equal(t, kerr.InvalidRequest, e.end("", pid, epoch, true).one(t))
	assert.Equal(t, Ongoing, e.describe(t, "tx").State)
}

// TestEndTxnPrepareFails: a PrepareCommit that cannot be written is
// answered the error, and the transaction stays Ongoing.
func TestEndTxnPrepareFails(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.log.setRefuse(kerr.CoordinatorNotAvailable)
	assert.Equal(t, kerr.CoordinatorNotAvailable, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, Ongoing, e.describe(t, "tx").State)
	e.log.setRefuse(nil)
	assert.Nil(t, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State)
}

// TestMarkersRetried: a partition whose marker failed with a retriable
// error gets it again after the backoff, a timer task, and only it; the
// transaction completes once it is written.
func TestMarkersRetried(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("a", 0), tp("b", 0))
	notLeader := errors.New("not leader")
	e.markers.setAuto(func(p TopicPartition) error {
		if p == tp("b", 0) {
			return notLeader
		}
		return nil
	})
	require.Nil(t, e.end("tx", pid, epoch, false).one(t))
	require.Len(t, e.markers.all(), 1)
	assert.Equal(t, PrepareAbort, e.describe(t, "tx").State)

	e.clk.Advance(DefaultRetryBackoff - 1)
	require.Len(t, e.markers.all(), 1, "not before the backoff")
	e.clk.Advance(1)
	calls := e.markers.all()
	require.Len(t, calls, 2)
	assert.Equal(t, []TopicPartition{tp("b", 0)}, calls[1].parts, "only the one that failed")
	assert.Equal(t, PrepareAbort, e.describe(t, "tx").State, "failed again")

	e.markers.setAuto(written)
	e.clk.Advance(DefaultRetryBackoff)
	require.Len(t, e.markers.all(), 3)
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
	e.clk.Advance(10 * DefaultRetryBackoff)
	assert.Len(t, e.markers.all(), 3, "no more")
}

// TestMarkersPartitionGone: a partition whose topic is gone is dropped,
// not retried, as Kafka does for a deleted topic.
func TestMarkersPartitionGone(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("a", 0), tp("deleted", 0))
	e.markers.setAuto(func(p TopicPartition) error {
		if p.Topic == "deleted" {
			return fmt.Errorf("%w: deleted", ErrPartitionGone)
		}
		return nil
	})
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State)
	e.clk.Advance(10 * DefaultRetryBackoff)
	assert.Len(t, e.markers.all(), 1, "not retried")
}

// TestMarkersMissingResult: a partition the writer leaves out of its
// results counts as retriable.
func TestMarkersMissingResult(t *testing.T) {
	e := newEnv(t, 0)
	e.markers.setAuto(nil)
	pid, epoch := e.ongoing(t, "tx", tp("a", 0), tp("b", 0))
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	e.markers.mu.Lock()
	held := e.markers.held
	e.markers.held = nil
	e.markers.mu.Unlock()
	require.Len(t, held, 1)
	held[0].done(map[TopicPartition]error{tp("a", 0): nil})
	assert.Equal(t, PrepareCommit, e.describe(t, "tx").State)

	e.clk.Advance(DefaultRetryBackoff)
	again := e.markers.answer(written)
	require.Len(t, again, 1)
	assert.Equal(t, []TopicPartition{tp("b", 0)}, again[0].parts)
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State)
}

// TestCompleteRetried: a completion that cannot be written is written
// again after the backoff; the id is CONCURRENT_TRANSACTIONS meanwhile.
func TestCompleteRetried(t *testing.T) {
	e := newEnv(t, 0)
	e.markers.setAuto(nil)
	pid, epoch := e.ongoing(t, "tx", tp("a", 0))
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	e.log.setRefuse(kerr.CoordinatorNotAvailable)
	e.markers.answer(written)
	assert.Equal(t, PrepareCommit, e.describe(t, "tx").State)
	assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err)

	e.log.setRefuse(nil)
	e.log.setHold(true)
	e.clk.Advance(DefaultRetryBackoff)
	require.Equal(t, 1, e.log.release(kerr.RequestTimedOut), "written again, not replicated")
	e.log.setHold(false)
	assert.Equal(t, PrepareCommit, e.describe(t, "tx").State)
	e.clk.Advance(DefaultRetryBackoff)
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State)
	assert.Len(t, e.markers.all(), 1, "the markers are not written again")
}

// TestEmptyTransactionCompletes: a transaction with no partition (an
// AddPartitions of none) completes without markers.
func TestEmptyTransactionCompletes(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx")
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State)
	assert.Empty(t, e.markers.all())
}
