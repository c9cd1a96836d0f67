package txn

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// endResult is an EndTxnV2's answer.
type endResult struct {
	pid   int64
	epoch int16
	err   *kerr.Error
}

func (e *env) addV2(id string, pid int64, epoch int16, parts ...TopicPartition) *answer[*kerr.Error] {
	a := new(answer[*kerr.Error])
	e.c.AddPartitionsV2(id, pid, epoch, parts, a.respond)
	return a
}

func (e *env) endV2(id string, pid int64, epoch int16, commit bool) *answer[endResult] {
	a := new(answer[endResult])
	e.c.EndTxnV2(id, pid, epoch, commit, func(p int64, ep int16, err *kerr.Error) { a.respond(endResult{p, ep, err}) })
	return a
}

// TestEndTxnV2BumpsEpoch: a version 2 end, commit or abort, is prepared at
// the next epoch, whose markers carry it, and answers the producer that
// epoch; the next transaction, at it, ends at the one after.
func TestEndTxnV2BumpsEpoch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "commit", false: "abort"}[commit], func(t *testing.T) {
			e := newEnv(t, 0)
			pid, epoch := e.initNow(t, "tx")
			require.Nil(t, e.addV2("tx", pid, epoch, tp("t", 0)).one(t))
			assert.True(t, e.log.last(t, "tx").tv2, "an implicit add marks the transaction version 2")

			assert.Equal(t, endResult{pid, epoch + 1, nil}, e.endV2("tx", pid, epoch, commit).one(t))
			calls := e.markers.all()
			require.Len(t, calls, 1)
			assert.Equal(t, Marker{ProducerID: pid, ProducerEpoch: epoch + 1, CoordinatorEpoch: testEpoch, Commit: commit},
				calls[0].m, "the markers carry the bumped epoch")
			want := map[bool]string{true: "CompleteCommit", false: "CompleteAbort"}[commit]
			assert.Equal(t, []string{"Empty", "Ongoing", map[bool]string{true: "PrepareCommit", false: "PrepareAbort"}[commit], want},
				e.log.states(t, "tx"))
			last := e.log.last(t, "tx")
			assert.Equal(t, epoch+1, last.epoch)
			assert.True(t, last.tv2, "written as a version 2 record")

			// The next transaction, at the epoch answered.
			assert.Equal(t, kerr.ProducerFenced, e.addV2("tx", pid, epoch, tp("t", 0)).one(t), "the old epoch")
			require.Nil(t, e.addV2("tx", pid, epoch+1, tp("t", 1)).one(t))
			assert.Equal(t, endResult{pid, epoch + 2, nil}, e.endV2("tx", pid, epoch+1, commit).one(t))
		})
	}
}

// TestEndTxnV2EmptyAbort: with transaction version 2, an abort with no
// transaction under way (Empty, or after a completed one) succeeds and
// bumps the epoch, with no marker to write; a commit is INVALID_TXN_STATE.
func TestEndTxnV2EmptyAbort(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	assert.Equal(t, kerr.InvalidTxnState, e.endV2("tx", pid, epoch, true).one(t).err, "nothing to commit")
	assert.Equal(t, endResult{pid, epoch + 1, nil}, e.endV2("tx", pid, epoch, false).one(t))
	assert.Empty(t, e.markers.all(), "no partition, no marker")
	assert.Equal(t, []string{"Empty", "PrepareAbort", "CompleteAbort"}, e.log.states(t, "tx"))

	// After a completed abort, at the id's epoch: another empty abort.
	assert.Equal(t, endResult{pid, epoch + 2, nil}, e.endV2("tx", pid, epoch+1, false).one(t))
	assert.Equal(t, kerr.InvalidTxnState, e.endV2("tx", pid, epoch+2, true).one(t).err)
}

// TestEndTxnV2Retries: an EndTxn v5 retried after it completed, at the
// epoch it was sent at, is answered the epoch it gave if it ended the
// same way, else INVALID_TXN_STATE; while its markers are written,
// CONCURRENT_TRANSACTIONS; at any other epoch, PRODUCER_FENCED.
func TestEndTxnV2Retries(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	require.Nil(t, e.addV2("tx", pid, epoch, tp("t", 0)).one(t))
	e.markers.setAuto(nil) // held
	require.Equal(t, endResult{pid, epoch + 1, nil}, e.endV2("tx", pid, epoch, true).one(t))

	assert.Equal(t, kerr.ConcurrentTransactions, e.endV2("tx", pid, epoch, true).one(t).err, "markers under way")
	assert.Equal(t, kerr.ConcurrentTransactions, e.endV2("tx", pid, epoch+1, false).one(t).err,
		"the next transaction's end, at the epoch answered, waits")
	assert.Equal(t, kerr.ConcurrentTransactions, e.addV2("tx", pid, epoch+1, tp("t", 0)).one(t), "the next transaction waits")
	assert.Equal(t, kerr.ConcurrentTransactions, e.addV2("tx", pid+1, epoch+1, tp("t", 0)).one(t),
		"checked before the producer id: a rotation's new one may be in use")

	e.markers.answer(written)
	assert.Equal(t, endResult{pid, epoch + 1, nil}, e.endV2("tx", pid, epoch, true).one(t), "a retry of the commit")
	assert.Equal(t, kerr.InvalidTxnState, e.endV2("tx", pid, epoch, false).one(t).err, "the other way")
	assert.Equal(t, kerr.ProducerFenced, e.endV2("tx", pid, epoch-1, true).one(t).err, "an older epoch")
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.endV2("tx", pid+1, epoch+1, true).one(t).err)
	assert.Equal(t, kerr.InvalidTxnState, e.endV2("tx", pid, epoch+1, true).one(t).err, "nothing to commit at the new epoch")
	assert.Len(t, e.log.states(t, "tx"), 4, "nothing written by the retries")
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.addV2("tx", pid+1, epoch+1, tp("t", 0)).one(t))
	assert.Equal(t, kerr.ProducerFenced, e.addV2("tx", pid, epoch, tp("t", 0)).one(t))
}

// TestEndTxnV2RotatesProducerID: ending a transaction at the last epoch
// but one moves the id to a new producer id (Kafka's nextProducerId): the
// Prepare names it, the markers carry the old id at its last epoch, the
// producer is answered the new id at epoch 0, and a retry naming the old
// id is answered the same.
func TestEndTxnV2RotatesProducerID(t *testing.T) {
	e := newEnv(t, 0)
	exhausted := int16(math.MaxInt16 - 1)
	_, err := e.c.Load(0, testEpoch, emptyAt("tx", 77, exhausted))
	require.NoError(t, err)
	require.Nil(t, e.addV2("tx", 77, exhausted, tp("t", 0)).one(t))

	e.markers.setAuto(nil)
	assert.Equal(t, endResult{1001, 0, nil}, e.endV2("tx", 77, exhausted, true).one(t))
	prepare := e.log.last(t, "tx")
	assert.Equal(t, PrepareCommit, prepare.state)
	assert.Equal(t, int16(math.MaxInt16), prepare.epoch)
	assert.True(t, prepare.rotating, "the Prepare names the next producer id")
	assert.Equal(t, int64(1001), prepare.nextPID)

	calls := e.markers.answer(written)
	require.Len(t, calls, 1)
	assert.Equal(t, Marker{ProducerID: 77, ProducerEpoch: math.MaxInt16, CoordinatorEpoch: testEpoch, Commit: true}, calls[0].m)
	done := e.log.last(t, "tx")
	assert.Equal(t, CompleteCommit, done.state)
	assert.Equal(t, int64(1001), done.pid)
	assert.Equal(t, int16(0), done.epoch)
	assert.Equal(t, int64(77), done.lastPID, "the old producer id is kept for a retry")

	assert.Equal(t, endResult{1001, 0, nil}, e.endV2("tx", 77, exhausted, true).one(t), "a retry naming the old id")
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.endV2("tx", 77, exhausted-1, true).one(t).err)
	e.markers.setAuto(written)
	require.Nil(t, e.addV2("tx", 1001, 0, tp("t", 0)).one(t))
	assert.Equal(t, endResult{1001, 1, nil}, e.endV2("tx", 1001, 0, false).one(t), "the new id goes on")
}

// TestEndTxnV2RotationLoaded: a rotating Prepare loaded by the next
// coordinator completes to the new producer id.
func TestEndTxnV2RotationLoaded(t *testing.T) {
	e := newEnv(t, 0)
	exhausted := int16(math.MaxInt16 - 1)
	_, err := e.c.Load(0, testEpoch, emptyAt("tx", 77, exhausted))
	require.NoError(t, err)
	require.Nil(t, e.addV2("tx", 77, exhausted, tp("t", 0)).one(t))
	e.markers.setAuto(nil)
	require.Nil(t, e.endV2("tx", 77, exhausted, false).one(t).err)

	r := e.log.replay(t, 0)
	e.c.Unload(0, nil)
	e.markers.setAuto(written)
	_, err = e.c.Load(0, testEpoch+1, r)
	require.NoError(t, err)
	e.clk.Advance(DefaultRetryBackoff) // the markers, written again
	done := e.log.last(t, "tx")
	assert.Equal(t, CompleteAbort, done.state)
	assert.Equal(t, int64(1001), done.pid)
	assert.Equal(t, int16(0), done.epoch)
}

// TestFenceV2BumpsTwice: the timeout of a version 2 transaction aborts it
// at the fence's epoch bumped once more, as every version 2 end is: the
// producer's EndTxn, at its epoch, is fenced rather than taken for a retry.
func TestFenceV2BumpsTwice(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	require.Nil(t, e.addV2("tx", pid, epoch, tp("t", 0)).one(t))
	e.clk.Advance(testTimeout + DefaultRetryBackoff)

	calls := e.markers.all()
	require.Len(t, calls, 1)
	assert.Equal(t, Marker{ProducerID: pid, ProducerEpoch: epoch + 2, CoordinatorEpoch: testEpoch}, calls[0].m)
	assert.Equal(t, CompleteAbort, e.describe(t, "tx").State)
	assert.Equal(t, kerr.ProducerFenced, e.endV2("tx", pid, epoch, false).one(t).err)
	assert.Equal(t, kerr.ProducerFenced, e.endV2("tx", pid, epoch, true).one(t).err)
}

// TestEndTxnV1AfterV2: a version 1 EndTxn (v4) ends a transaction without
// a bump, and its record is version 1's again.
func TestEndTxnV1AfterV2(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	require.Nil(t, e.addV2("tx", pid, epoch, tp("t", 0)).one(t))
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	last := e.log.last(t, "tx")
	assert.Equal(t, epoch, last.epoch)
	assert.False(t, last.tv2)
	assert.Nil(t, e.end("tx", pid, epoch, true).one(t), "a version 1 retry")
}

// TestAddPartitionsV2WaitsForAnotherAdd: the leaders of a version 2
// transaction's partitions add them each on its own, at once: with a
// CompletionWait, an add that finds another's write under way waits for
// it, then adds its own, where a version 1 add is answered
// CONCURRENT_TRANSACTIONS.
func TestAddPartitionsV2WaitsForAnotherAdd(t *testing.T) {
	e := newEnv(t, 0, func(cfg *Config) { cfg.CompletionWait = time.Second })
	pid, epoch := e.initNow(t, "tx")
	e.log.setHold(true)
	first := e.addV2("tx", pid, epoch, tp("a", 0))
	second := e.addV2("tx", pid, epoch, tp("b", 0))
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("tx", pid, epoch, tp("c", 0)).one(t), "version 1")
	assert.Zero(t, second.n(), "waits for the first add's write")
	e.log.setHold(false)
	e.log.release(nil) // the first add's write; the second's is then written at once
	require.Nil(t, first.one(t))
	require.Nil(t, second.one(t))
	assert.Equal(t, []TopicPartition{tp("a", 0), tp("b", 0)}, e.describe(t, "tx").Partitions)
}
