package share

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkLocksLocked checks that p's lock slab agrees with its window: every
// acquired record names a lock in use that spans it, a lock in use holds
// exactly the records that name it, the free list holds the rest, and no
// record below availFrom is available. It expects every expired lock to
// have run (a timer without workers). REQUIRES: p.mu held.
func checkLocksLocked(t *testing.T, p *Partition, step int) {
	t.Helper()
	free := make(map[int32]bool)
	for i := p.locks.free; i > 0; i = p.locks.at(i - 1).next {
		require.False(t, free[i-1], "step %d: lock %d twice in the free list", step, i-1)
		free[i-1] = true
		require.Less(t, len(free), int(p.locks.used)+1, "step %d: the free list loops", step)
	}
	held := make(map[int32]int16)
	for i, r := range p.recs {
		off := p.start + int64(i)
		if off < p.availFrom {
			require.NotEqual(t, Available, r.state, "step %d: offset %d is available below availFrom %d", step, off, p.availFrom)
		}
		if r.state != Acquired {
			continue
		}
		require.Less(t, r.lock, p.locks.used, "step %d: offset %d names a lock never handed out", step, off)
		require.False(t, free[r.lock], "step %d: offset %d names a free lock", step, off)
		l := p.locks.at(r.lock)
		require.True(t, off >= l.first && off <= l.last(), "step %d: offset %d outside its lock's [%d, %d]", step, off, l.first, l.last())
		held[r.lock]++
	}
	refs := make([]int32, len(p.holders.names))
	for i := range p.locks.used {
		if free[i] {
			continue
		}
		l := p.locks.at(i)
		require.Equal(t, held[i], l.held, "step %d: lock %d's count of the records it holds", step, i)
		require.Positive(t, l.held, "step %d: lock %d holds nothing but is not free", step, i)
		require.GreaterOrEqual(t, l.group, int32(0), "step %d: lock %d holds records in no group", step, i)
		refs[l.member]++
	}
	checkGroupsLocked(t, p, step)
	require.Len(t, p.holders.locks, len(refs))
	for i, n := range refs {
		require.Equal(t, n, p.holders.locks[i], "step %d: member entry %d counts the locks naming it", step, i)
	}
	for i, n := range refs {
		if n == 0 {
			require.Empty(t, p.holders.names[i], "step %d: a free entry keeps no member", step)
		}
	}
}

// TestLocksSpanChunks holds more locks than a chunk has, lets them all
// expire, and takes as many again: the slab reuses them.
func TestLocksSpanChunks(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	const n = 3*lockChunk + 5
	for range n {
		require.Len(t, p.Acquire("a", 1, 0, n, testLock), 1)
	}
	assert.Len(t, p.locks.chunks, 4)
	h.advance(testLock)
	assert.Zero(t, h.tm.Stats().Pending)
	assert.Equal(t, []Range{{0, n - 1, 2}}, p.Acquire("b", n, 0, n, testLock), "every record released once")
	for off := range int64(n) {
		require.NoError(t, p.Acknowledge("b", off, off, []int8{int8(AckAccept)}, testLock))
	}
	assert.Equal(t, int32(n), p.locks.used, "no lock beyond the first acquisitions'")
	assert.Equal(t, int64(n), p.Start())
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
		ranges = p.AcquireAppend(ranges[:0], "a", 1, 0, off+1, testLock, nil)
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
	assert.Equal(t, []int32{2, 1}, p.holders.locks, "a's two locks, b's one")
	require.NoError(t, p.Acknowledge("a", 0, 1, []int8{int8(AckAccept)}, testLock))
	p.Release("a")
	assert.Equal(t, []string{"", "b"}, p.holders.names, "a holds nothing: its entry is free")
	assert.ErrorIs(t, p.Acknowledge("a", 4, 4, []int8{int8(AckAccept)}, testLock), ErrInvalidRecordState,
		"a member holding nothing acknowledges nothing")
	assert.Equal(t, []Range{{4, 5, 2}}, p.Acquire("c", 2, 0, 10, testLock), "a's released records")
	assert.Equal(t, []string{"c", "b"}, p.holders.names, "c takes the free entry")
	require.NoError(t, p.Acknowledge("c", 4, 5, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("b", 2, 3, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, []int32{0, 0}, p.holders.locks)
	assert.Equal(t, int64(6), p.Start())
}

// TestLockSize pins a lock's size: it is most of the heap a held lock
// takes (BenchmarkAcquisitionLocks), its group's share of a task the rest.
func TestLockSize(t *testing.T) {
	assert.Equal(t, uintptr(32), unsafe.Sizeof(lock{}))
	assert.Equal(t, uintptr(80), unsafe.Sizeof(group{}))
}
