package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// reload unloads partition 0 and loads r instead, at epoch, as a new
// leader of it would.
func (e *env) reload(t *testing.T, epoch int32, r *Replay) {
	t.Helper()
	e.log.setLoaded(0, false)
	e.c.Unload(0, nil)
	e.log.setLoaded(0, true)
	_, err := e.c.Load(0, epoch, r)
	require.NoError(t, err)
}

// TestLoadResendsMarkers: a PrepareCommit or PrepareAbort loaded has its
// markers written again, at the coordinator epoch of the load, on the
// timer's next tick (never inside Load, under the runtime's lock), and is
// then completed; meanwhile its requests are CONCURRENT_TRANSACTIONS.
func TestLoadResendsMarkers(t *testing.T) {
	e := newEnv(t, 0)
	r := &Replay{}
	now := wallStart.UnixMilli()
	r.apply("c", &metadata{pid: 9, epoch: 3, timeoutMs: 60000, state: PrepareCommit,
		parts: set(tp("t", 0), tp("u", 1)), start: now - 1000, updated: now})
	r.apply("a", &metadata{pid: 8, epoch: 4, timeoutMs: 60000, state: PrepareAbort, parts: set(tp("t", 2)),
		start: now - 1000, updated: now})
	e.reload(t, 7, r)
	assert.Empty(t, e.markers.all(), "not inside Load")
	assert.Equal(t, kerr.ConcurrentTransactions, e.end("c", 9, 3, true).one(t))
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("a", 8, 4, tp("t", 2)).one(t))

	e.clk.Advance(soon)
	calls := e.markers.all()
	require.Len(t, calls, 2)
	byPID := map[int64]markerCall{calls[0].m.ProducerID: calls[0], calls[1].m.ProducerID: calls[1]}
	assert.Equal(t, Marker{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 7, Commit: true}, byPID[9].m)
	assert.Equal(t, []TopicPartition{tp("t", 0), tp("u", 1)}, byPID[9].parts)
	assert.Equal(t, Marker{ProducerID: 8, ProducerEpoch: 4, CoordinatorEpoch: 7}, byPID[8].m)
	assert.Equal(t, CompleteCommit, e.describe(t, "c").State)
	assert.Equal(t, CompleteAbort, e.describe(t, "a").State)
	assert.Equal(t, []string{"CompleteCommit"}, e.log.states(t, "c"), "written by the new coordinator")
	assert.Nil(t, e.end("c", 9, 3, true).one(t), "the producer's retry of its commit")
}

// TestLoadArmsTimeout: an Ongoing transaction loaded times out at its
// start plus its timeout, as if it had never moved; one long past it is
// aborted on the next tick.
func TestLoadArmsTimeout(t *testing.T) {
	e := newEnv(t, 0)
	r := &Replay{}
	now := wallStart.UnixMilli()
	r.apply("recent", &metadata{pid: 9, epoch: 3, timeoutMs: 10000, state: Ongoing, parts: set(tp("t", 0)),
		start: now - 4000, updated: now - 4000})
	r.apply("old", &metadata{pid: 8, epoch: 1, timeoutMs: 10000, state: Ongoing, parts: set(tp("t", 1)),
		start: now - 60000, updated: now - 60000})
	e.reload(t, 7, r)

	e.clk.Advance(soon)
	assert.Equal(t, CompleteAbort, e.describe(t, "old").State)
	assert.Equal(t, int16(2), e.describe(t, "old").ProducerEpoch, "fenced")
	e.clk.Advance(6*time.Second - 2*soon)
	assert.Equal(t, Ongoing, e.describe(t, "recent").State)
	e.clk.Advance(soon)
	d := e.describe(t, "recent")
	assert.Equal(t, CompleteAbort, d.State)
	assert.Equal(t, int16(4), d.ProducerEpoch)
}

// TestLoadArmsExpiration: an idle id loaded expires IDExpiration after its
// last change.
func TestLoadArmsExpiration(t *testing.T) {
	e := newEnv(t, 0, withExpiration)
	now := wallStart.UnixMilli()
	r := &Replay{}
	r.apply("tx", &metadata{pid: 9, epoch: 3, timeoutMs: 10000, state: CompleteCommit, start: now - 5000,
		updated: now - time.Minute.Milliseconds()})
	e.reload(t, 7, r)
	e.clk.Advance(testExpiration - time.Minute - soon)
	require.Nil(t, e.describe(t, "tx").Err)
	e.clk.Advance(soon)
	assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "tx").Err)
}

// TestUnload: unloading a partition forgets its ids: the requests waiting
// for a write are answered NOT_COORDINATOR at once, and once only;
// markers under way and timers end without effect; later requests are
// NOT_COORDINATOR.
func TestUnload(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "ongoing", tp("t", 0))
	cp, ce := e.ongoing(t, "committing", tp("t", 1))
	e.markers.setAuto(nil)
	require.Nil(t, e.end("committing", cp, ce, true).one(t))
	e.log.setHold(true)
	add := e.add("ongoing", pid, epoch, tp("t", 2))
	init := e.init("new", -1, -1)
	require.Zero(t, add.n()+init.n())

	e.log.setLoaded(0, false)
	assert.Equal(t, 3, e.c.Unload(0, nil))
	assert.Equal(t, kerr.NotCoordinator, add.one(t))
	assert.Equal(t, initResult{-1, -1, kerr.NotCoordinator}, init.one(t))

	writes := e.log.appends(0)
	e.log.setHold(false)
	e.log.release(nil)
	assert.Equal(t, 1, add.n(), "not answered again")
	assert.Equal(t, 1, init.n())
	e.markers.answer(written)
	e.clk.Advance(2 * testTimeout)
	assert.Equal(t, writes, e.log.appends(0), "nothing written after the unload")

	assert.Equal(t, kerr.NotCoordinator, e.add("ongoing", pid, epoch, tp("t", 0)).one(t))
	assert.Equal(t, kerr.NotCoordinator, e.init("ongoing", -1, -1).one(t).err)
	assert.Equal(t, kerr.NotCoordinator, e.describe(t, "ongoing").Err)
}

// TestUnloadOnePartition: ids of other partitions stay.
func TestUnloadOnePartition(t *testing.T) {
	e := newEnv(t, 2)
	// "a" and "b" are in different partitions of two.
	require.NotEqual(t, e.log.n, 0)
	pa, _ := e.log.PartitionOf("a")
	pb, _ := e.log.PartitionOf("b")
	require.NotEqual(t, pa, pb)
	e.initNow(t, "a")
	e.initNow(t, "b")
	e.log.setLoaded(pa, false)
	assert.Equal(t, 1, e.c.Unload(pa, nil))
	assert.Equal(t, kerr.NotCoordinator, e.describe(t, "a").Err)
	assert.Nil(t, e.describe(t, "b").Err)
}

// TestMoveKeepsTransactions: a coordinator that loads the log another
// wrote has every id as that one left it (the last producer id and epoch
// aside, which Kafka's transaction version 1 keeps in memory only).
func TestMoveKeepsTransactions(t *testing.T) {
	a := newEnv(t, 0)
	a.initNow(t, "empty")
	a.ongoing(t, "ongoing", tp("t", 0), tp("u", 1))
	p, ep := a.ongoing(t, "committed", tp("t", 0))
	require.Nil(t, a.end("committed", p, ep, true).one(t))
	p, ep = a.ongoing(t, "fenced", tp("t", 3))
	require.Equal(t, kerr.ConcurrentTransactions, a.init("fenced", -1, -1).one(t).err)
	_ = ep
	ids := []string{"empty", "ongoing", "committed", "fenced"}

	b := newEnv(t, 0)
	b.reload(t, 9, a.log.replay(t, 0))
	assert.Equal(t, a.c.Describe(ids), b.c.Describe(ids))
	la, _ := a.c.List(nil, nil, -1)
	lb, _ := b.c.List(nil, nil, -1)
	assert.Equal(t, la, lb)
	assert.Equal(t, initResult{pid: p, epoch: 2}, b.init("fenced", -1, -1).one(t), "goes on from the fence")
}

// TestLoadAgain: a partition loaded again without an Unload between has
// only the ids of the new replay; the old ones' waiting requests are
// answered NOT_COORDINATOR.
func TestLoadAgain(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "stale", tp("t", 0))
	e.log.setHold(true)
	a := e.add("stale", pid, epoch, tp("t", 1))
	_, err := e.c.Load(0, 8, emptyAt("fresh", 5, 0))
	require.NoError(t, err)
	assert.Equal(t, kerr.NotCoordinator, a.one(t))
	assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "stale").Err)
	assert.Equal(t, int64(5), e.describe(t, "fresh").ProducerID)
}

// TestLoadAfterClose: a partition loaded after Close is refused.
func TestLoadAfterClose(t *testing.T) {
	e := newEnv(t, 0)
	require.NoError(t, e.c.Close())
	_, err := e.c.Load(0, 1, &Replay{})
	assert.ErrorIs(t, err, ErrClosed)
}

// TestClose: Close answers the requests waiting for a write
// NOT_COORDINATOR, and later ones COORDINATOR_NOT_AVAILABLE; no timer
// runs after it.
func TestClose(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	e.log.setHold(true)
	a := e.add("tx", pid, epoch, tp("t", 1))
	require.NoError(t, e.c.Close())
	assert.Equal(t, kerr.NotCoordinator, a.one(t))
	e.log.setHold(false)
	e.log.release(nil)
	assert.Equal(t, 1, a.n())
	assert.Equal(t, kerr.CoordinatorNotAvailable, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, kerr.CoordinatorNotAvailable, e.init("x", -1, -1).one(t).err)
	writes := e.log.appends(0)
	e.clk.Advance(2 * testTimeout)
	assert.Equal(t, writes, e.log.appends(0), "no timeout after Close")
	require.NoError(t, e.c.Close(), "idempotent")
}
