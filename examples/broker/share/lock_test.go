package share

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkLocksLocked checks that p's locks agree with its window: every
// acquired record names a group in use, of a member holding records, that
// bounds its offset; a group in use counts exactly the records naming it,
// has its one run to come and a task in the timer; the free list holds
// the rest; a member's entry counts the groups naming it and its open
// group is one of them; and no record below availFrom is available. It
// expects every expired group to have run (a timer without workers).
// REQUIRES: p.mu held.
func checkLocksLocked(t *testing.T, p *Partition, step int) {
	t.Helper()
	s := &p.groups
	free := make(map[int32]bool)
	for i := s.free; i > 0; i = s.at(i - 1).count {
		require.False(t, free[i-1], "step %d: group %d twice in the free list", step, i-1)
		free[i-1] = true
		require.Less(t, len(free), int(s.used)+1, "step %d: the free list loops", step)
	}
	held := make(map[int32]int32)
	for i, r := range p.recs {
		off := p.start + int64(i)
		if off < p.availFrom {
			require.NotEqual(t, Available, r.state, "step %d: offset %d is available below availFrom %d", step, off, p.availFrom)
		}
		if r.state != Acquired {
			continue
		}
		require.True(t, r.group >= 0 && r.group < s.used, "step %d: offset %d names group %d, never handed out", step, off, r.group)
		require.False(t, free[r.group], "step %d: offset %d names a free group", step, off)
		g := s.at(r.group)
		require.True(t, off >= g.lo && off <= g.hi, "step %d: offset %d outside its group's [%d, %d]", step, off, g.lo, g.hi)
		held[r.group]++
	}
	refs := make([]int32, len(p.holders.names))
	for i := range s.used {
		if free[i] {
			continue
		}
		g := s.at(i)
		require.Equal(t, held[i], g.count, "step %d: group %d's count of the records it holds", step, i)
		require.Positive(t, g.count, "step %d: group %d holds nothing but is not free", step, i)
		require.Equal(t, int16(1), g.runs, "step %d: group %d's task, pending, runs once", step, i)
		require.GreaterOrEqual(t, g.member, int32(0), "step %d: group %d has a member", step, i)
		refs[g.member]++
	}
	require.Equal(t, int64(int(s.used)-len(free)), p.m.cfg.Timer.Stats().Pending,
		"step %d: a task per group in use", step)
	require.Len(t, p.holders.refs, len(refs))
	for i, n := range refs {
		require.Equal(t, n, p.holders.refs[i], "step %d: member entry %d counts the groups naming it", step, i)
		if n == 0 {
			require.Empty(t, p.holders.names[i], "step %d: a free entry keeps no member", step)
		}
		if o := p.holders.open[i]; o > 0 {
			require.False(t, free[o-1], "step %d: member entry %d's open group is free", step, i)
			require.Equal(t, int32(i), s.at(o-1).member, "step %d: member entry %d's open group is its own", step, i)
		}
	}
}

// TestGroupsSpanChunks holds more groups than a chunk has (locks taken a
// tick apart), lets them all expire, and takes as many again: the slab
// reuses them.
func TestGroupsSpanChunks(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	const n = 2*groupChunk + 5
	for range n {
		require.Len(t, p.Acquire("a", 1, 0, n, testLock), 1)
		h.advance(time.Millisecond)
	}
	assert.Len(t, p.groups.chunks, 3)
	assert.Equal(t, int64(n), h.tm.Stats().Pending, "a group a tick")
	h.advance(testLock)
	assert.Zero(t, h.tm.Stats().Pending)
	for off := range int64(n) {
		require.Equal(t, []Range{{off, off, 2}}, p.Acquire("b", 1, 0, n, testLock), "every record released once")
		h.advance(time.Millisecond)
	}
	assert.Equal(t, int32(n), p.groups.used, "no group beyond the first acquisitions'")
	h.advance(testLock)
	assert.Equal(t, []Range{{0, n - 1, 3}}, p.Acquire("c", n, 0, n, testLock))
}

// TestAcquireLooksFromTheFirstAvailable releases records out of order and
// acquires them back one at a time, in offset order.
func TestAcquireLooksFromTheFirstAvailable(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 10, 0, 10, testLock), 1)
	for _, off := range []int64{7, 2, 5} {
		require.NoError(t, p.Acknowledge("a", off, off, []int8{int8(AckRelease)}, testLock))
	}
	for _, off := range []int64{2, 5, 7} {
		assert.Equal(t, []Range{{off, off, 2}}, p.Acquire("b", 1, 0, 10, testLock), "offset %d next", off)
	}
	require.NoError(t, p.Acknowledge("b", 5, 5, []int8{int8(AckRelease)}, testLock))
	assert.Equal(t, []Range{{5, 5, 3}}, p.Acquire("c", 1, 0, 10, testLock), "a record released behind the search is found")
}

// TestAcquireAndAcknowledgeAllocateNothing is the lock path a broker
// runs: with the runs' array reused, taking and settling a lock allocates
// nothing once the slab and the window have grown.
func TestAcquireAndAcknowledgeAllocateNothing(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	accept := []int8{int8(AckAccept)}
	var ranges []Range
	off := int64(0)
	cycle := func() {
		ranges = p.AcquireAppend(ranges[:0], "a", 1, BatchOptimized, 0, off+1, testLock, nil)
		if err := p.Acknowledge("a", off, off, accept, testLock); err != nil {
			t.Fatal(err)
		}
		off++
	}
	cycle()
	assert.Zero(t, testing.AllocsPerRun(1000, cycle))
	assert.Zero(t, h.tm.Stats().Pending)
}

// TestMemberEntriesAreReused has a member's locks all go: its entry in
// the partition's holders is free, and the next member takes it.
func TestMemberEntriesAreReused(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 2, 0, 10, testLock), 1)
	require.Len(t, p.Acquire("b", 2, 0, 10, testLock), 1)
	require.Len(t, p.Acquire("a", 2, 0, 10, testLock), 1)
	assert.Equal(t, []int32{1, 1}, p.holders.refs, "a's two locks share a group (one tick), b's has one")
	require.NoError(t, p.Acknowledge("a", 0, 1, []int8{int8(AckAccept)}, testLock))
	p.Release("a")
	assert.Equal(t, []string{"", "b"}, p.holders.names, "a holds nothing: its entry is free")
	assert.ErrorIs(t, p.Acknowledge("a", 4, 4, []int8{int8(AckAccept)}, testLock), ErrInvalidRecordState,
		"a member holding nothing acknowledges nothing")
	assert.Equal(t, []Range{{4, 5, 2}}, p.Acquire("c", 2, 0, 10, testLock), "a's released records")
	assert.Equal(t, []string{"c", "b"}, p.holders.names, "c takes the free entry")
	require.NoError(t, p.Acknowledge("c", 4, 5, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("b", 2, 3, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, []int32{0, 0}, p.holders.refs)
	assert.Equal(t, int64(6), p.Start())
}

// TestLockSize pins the sizes a held lock takes (BenchmarkAcquisitionLocks):
// its records', and its share of a group's.
func TestLockSize(t *testing.T) {
	assert.Equal(t, uintptr(8), unsafe.Sizeof(record{}))
	assert.Equal(t, uintptr(96), unsafe.Sizeof(group{}))
}
