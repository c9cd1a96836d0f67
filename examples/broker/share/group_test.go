package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

// groupOf returns the group of the lock holding off.
func groupOf(t *testing.T, p *Partition, off int64) *group {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.recs[off-p.start]
	require.Equal(t, Acquired, r.state, "offset %d is acquired", off)
	require.NotEqual(t, int32(noGroup), r.group, "offset %d's lock is in a group", off)
	return p.groups.at(r.group)
}

func assertState(t *testing.T, p *Partition, off int64, want State, msg string) {
	t.Helper()
	st, _ := p.StateOf(off)
	assert.Equal(t, want, st, "offset %d: %s", off, msg)
}

// sharingPair acquires offset 0 at 0.1ms and offset 1 at 0.6ms for a: the
// deadlines of the two locks, 30,000.1ms and 30,000.6ms, fall due in the
// timer's tick 30,001 (of 1ms), and they share its task.
func sharingPair(t *testing.T) (*harness, *Partition) {
	t.Helper()
	h := newHarness(t, Config{})
	p := h.part(0)
	h.advance(100 * time.Microsecond)
	require.Equal(t, []Range{{0, 0, 1}}, p.Acquire("a", 1, 0, 10, testLock))
	h.advance(500 * time.Microsecond)
	require.Equal(t, []Range{{1, 1, 1}}, p.Acquire("a", 1, 0, 10, testLock))
	require.Same(t, groupOf(t, p, 0), groupOf(t, p, 1), "one group for the tick")
	require.Equal(t, int64(1), h.tm.Stats().Pending, "one task for two locks")
	return h, p
}

// TestLocksSharingATaskExpireTogether: two locks due in one tick are
// released together, on the tick the timer would have released each of
// them alone, and never before either's deadline.
func TestLocksSharingATaskExpireTogether(t *testing.T) {
	h, p := sharingPair(t)
	h.advance(testLock - 500*time.Microsecond) // 30,000.1ms: a's deadline
	assertState(t, p, 0, Acquired, "not before its tick, though past its deadline")
	assertState(t, p, 1, Acquired, "not before its deadline")
	h.advance(899 * time.Microsecond) // 30,000.999ms: past both deadlines
	assertState(t, p, 0, Acquired, "the timer rounds a deadline up to its tick")
	assertState(t, p, 1, Acquired, "the timer rounds a deadline up to its tick")
	before := h.wakes(testKey)
	h.advance(time.Microsecond) // 30,001ms: the tick
	assertState(t, p, 0, Available, "released on the tick")
	assertState(t, p, 1, Available, "released on the same tick")
	assert.Equal(t, before+1, h.wakes(testKey), "one wake-up for the group")
	assert.Zero(t, h.tm.Stats().Pending)
	p.mu.Lock()
	checkLocksLocked(t, p, 0)
	p.mu.Unlock()
}

// TestMembersDoNotShareATask: the locks of two members due in one tick
// are two groups, so that a member's acknowledgement compares its group's
// member, and each expires on the tick.
func TestMembersDoNotShareATask(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 1, 0, 10, testLock), 1)
	require.Len(t, p.Acquire("b", 1, 0, 10, testLock), 1)
	assert.NotSame(t, groupOf(t, p, 0), groupOf(t, p, 1))
	assert.ErrorIs(t, p.Acknowledge("b", 0, 0, []int8{int8(AckAccept)}, testLock), ErrInvalidRecordState)
	h.advance(testLock)
	assertState(t, p, 0, Available, "a's released")
	assertState(t, p, 1, Available, "b's released")
}

// TestAcknowledgingOneLockKeepsTheOthersExpiry: the group's task goes on
// for the lock still held, and releases only its records.
func TestAcknowledgingOneLockKeepsTheOthersExpiry(t *testing.T) {
	h, p := sharingPair(t)
	require.NoError(t, p.Acknowledge("a", 0, 0, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int64(1), h.tm.Stats().Pending, "the other lock still holds the task")
	h.advance(testLock + 399*time.Microsecond) // 30,000.999ms
	assertState(t, p, 1, Acquired, "not before its tick")
	h.advance(time.Microsecond)
	assertState(t, p, 1, Available, "the other record released on the tick")
	assertState(t, p, 0, Archived, "the acknowledged one stays so, below the start")
	assert.Equal(t, int64(1), p.Start(), "the start stops at the released record")
	assert.Zero(t, h.tm.Stats().Pending)
}

// TestAcknowledgingEveryLockCancelsTheTask: the group's last lock to go
// cancels its task at once.
func TestAcknowledgingEveryLockCancelsTheTask(t *testing.T) {
	h, p := sharingPair(t)
	g := groupOf(t, p, 0)
	require.NoError(t, p.Acknowledge("a", 1, 1, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int64(1), h.tm.Stats().Pending)
	require.NoError(t, p.Acknowledge("a", 0, 0, []int8{int8(AckAccept)}, testLock))
	assert.Zero(t, h.tm.Stats().Pending, "cancelled with its last lock")
	assert.Zero(t, g.runs, "no run to come")
	assert.Equal(t, g.idx+1, p.groups.free, "the group is free")
	assert.Zero(t, p.holders.refs[0], "and its member holds nothing")
	h.advance(time.Hour)
	assert.Equal(t, int64(2), p.Start(), "nothing expires afterwards")
}

// TestRenewalMovesALockToItsNewTick: renewing offset 1 moves its lock to
// the group of its new deadline; offset 0's expires on the old tick.
func TestRenewalMovesALockToItsNewTick(t *testing.T) {
	h, p := sharingPair(t)
	old := groupOf(t, p, 0)
	h.advance(10 * time.Second) // 10,000.6ms
	require.NoError(t, p.Acknowledge("a", 1, 1, []int8{int8(AckRenew)}, testLock))
	assert.NotSame(t, old, groupOf(t, p, 1), "the renewed lock left the group")
	assert.Same(t, old, groupOf(t, p, 0), "the other did not")
	assert.Equal(t, int64(2), h.tm.Stats().Pending, "a task for each tick")
	h.advance(testLock - 10*time.Second + 400*time.Microsecond) // 30,001ms
	assertState(t, p, 0, Available, "offset 0's lock expires on the old tick")
	assertState(t, p, 1, Acquired, "offset 1's was moved")
	h.advance(10*time.Second - 1*time.Microsecond) // 40,000.999ms
	assertState(t, p, 1, Acquired, "not before its new deadline's tick")
	h.advance(time.Microsecond) // 40,001ms, the tick of 40,000.6ms
	assertState(t, p, 1, Available, "offset 1's lock expires on its new tick")
	assert.Zero(t, h.tm.Stats().Pending)
}

// TestAGroupWithARunToComeIsNotReused acknowledges the record of a lock
// whose group's task has left the wheel but not yet run (expired, its run
// waiting for the partition's lock): the group is closed to new records
// and reused only once that run is done, and the run releases nothing of
// the acquisitions made meanwhile, of the same member in the same tick
// or not.
func TestAGroupWithARunToComeIsNotReused(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 1, 0, 10, testLock), 1)
	g := groupOf(t, p, 0)
	require.True(t, h.tm.Cancel(&g.task), "the task leaves the wheel as if it had expired")
	require.NoError(t, p.Acknowledge("a", 0, 0, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int16(1), g.runs, "its run is still to come")

	assert.Equal(t, []Range{{1, 1, 1}}, p.Acquire("a", 1, 0, 10, testLock), "a again, in the same tick")
	h.advance(time.Second) // a later tick
	assert.Equal(t, []Range{{2, 2, 1}}, p.Acquire("b", 1, 0, 10, testLock))
	assert.NotSame(t, g, groupOf(t, p, 1), "a new group, not the one whose run is to come")
	assert.NotSame(t, g, groupOf(t, p, 2), "a new group, not the one whose run is to come")
	g.Run() // the expiry, late
	assertState(t, p, 1, Acquired, "the late run releases nothing of a's new lock")
	assertState(t, p, 2, Acquired, "nor of b's")
	assert.Equal(t, int64(2), h.tm.Stats().Pending, "the new groups are pending")

	h.advance(time.Second)
	assert.Equal(t, []Range{{3, 3, 1}}, p.Acquire("c", 1, 0, 10, testLock))
	assert.Same(t, g, groupOf(t, p, 3), "the group is reused once its run is done")
	assert.Equal(t, int32(3), p.groups.used)
	require.NoError(t, p.Acknowledge("a", 1, 1, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("b", 2, 2, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("c", 3, 3, []int8{int8(AckAccept)}, testLock))
	assert.Zero(t, h.tm.Stats().Pending)
}

// TestRenewalOfAnExpiringLock renews a lock whose group's task has left
// the wheel but not yet run: the renewal moves it to a new group, and that
// run, which finds it no more, releases nothing (the renewal wins; nothing
// is released before its deadline either way).
func TestRenewalOfAnExpiringLock(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 2, 0, 10, testLock), 1)
	g := groupOf(t, p, 0)
	require.True(t, h.tm.Cancel(&g.task), "the task leaves the wheel as if it had expired")
	h.advance(time.Second)
	require.NoError(t, p.Acknowledge("a", 0, 1, []int8{int8(AckRenew)}, testLock))
	assert.Equal(t, int16(1), g.runs, "the old group's run is still to come")
	assert.Equal(t, int64(1), h.tm.Stats().Pending, "the renewed lock's group")

	g.Run()
	for off := int64(0); off < 2; off++ {
		assertState(t, p, off, Acquired, "the old group's run finds the lock gone")
	}
	assert.Equal(t, int32(g.idx+1), p.groups.free, "the old group is free once its run is done")
	h.advance(testLock)
	for off := int64(0); off < 2; off++ {
		st, n := p.StateOf(off)
		assert.Equal(t, Available, st, "offset %d released at its new deadline", off)
		assert.Equal(t, int16(1), n, "offset %d keeps its delivery", off)
	}
	assert.Zero(t, h.tm.Stats().Pending)
	assert.Equal(t, []Range{{0, 1, 2}}, p.Acquire("b", 5, 0, 2, testLock))
	assert.Equal(t, int32(1), p.groups.free, "the old group is reused")
}

// TestGroupsTickIsTheTimersByDefault: a Manager groups locks by its
// timer's own tick unless told otherwise, so that a group's task runs on
// the tick each lock's own task would have run on, whatever tick the
// timer was made with.
func TestGroupsTickIsTheTimersByDefault(t *testing.T) {
	tm, err := timer.New(timer.WithClock(timer.NewManualClock(0)), timer.WithWorkers(0), timer.WithAutoAdvance(false),
		timer.WithTick(5*time.Millisecond))
	require.NoError(t, err)
	defer tm.Close()
	m, err := NewManager(Config{Timer: tm})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Millisecond, m.cfg.Tick)
}
