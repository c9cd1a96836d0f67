package share

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

const testLock = 30 * time.Second

// harness is a Manager on a manual clock whose wake-ups are counted.
type harness struct {
	m   *Manager
	tm  *timer.Timer
	clk *timer.ManualClock

	mu    sync.Mutex
	woken map[Key]int
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{clk: timer.NewManualClock(0), woken: make(map[Key]int)}
	tm, err := timer.New(timer.WithClock(h.clk), timer.WithWorkers(0), timer.WithAutoAdvance(false))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	h.tm = tm
	cfg.Timer = tm
	cfg.Wake = func(k Key) {
		h.mu.Lock()
		h.woken[k]++
		h.mu.Unlock()
	}
	h.m, err = NewManager(cfg)
	require.NoError(t, err)
	return h
}

// advance moves the clock by d and runs every lock then due.
func (h *harness) advance(d time.Duration) {
	h.clk.Advance(d)
	h.tm.AdvanceClock(context.Background(), 0)
}

func (h *harness) wakes(k Key) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.woken[k]
}

var testKey = Key{Group: "g", Topic: [16]byte{1}, Partition: 0}

func (h *harness) part(start int64) *Partition {
	return h.m.GetOrInit(testKey, func() int64 { return start })
}

func TestAcquireHandsOutNewRecordsOnceEach(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	got := p.Acquire("a", 3, 0, 10, testLock)
	assert.Equal(t, []Range{{0, 2, 1}}, got, "the first three records, first delivery")
	got = p.Acquire("b", 100, 0, 10, testLock)
	assert.Equal(t, []Range{{3, 9, 1}}, got, "the rest, to the log's end")
	assert.Empty(t, p.Acquire("c", 100, 0, 10, testLock), "nothing left to acquire")
	assert.Equal(t, int64(0), p.Start())
	assert.Equal(t, int64(10), p.End())
	assert.Equal(t, int64(2), h.tm.Stats().Pending, "a task for each member's lock (group.go)")
}

// TestAcquireRoundsNewRecordsUpToTheirBatch: with the log's batches
// known, max is a soft limit for new records, as in Kafka's
// SharePartition: they are acquired to the end of the batch holding the
// last one max allows (each batch handed out once), within the log's
// readable end; records made available again are counted exactly.
func TestAcquireRoundsNewRecordsUpToTheirBatch(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	const logEnd = 25
	tens := func(off int64) (int64, bool) { // batches of ten: 0-9, 10-19, 20-29
		return off/10*10 + 9, off < logEnd
	}
	got := p.AcquireAppend(nil, "a", 3, BatchOptimized, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{0, 9, 1}}, got, "three asked: the whole first batch")
	got = p.AcquireAppend(nil, "b", 12, BatchOptimized, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{10, 24, 1}}, got, "twelve asked: to the end of 20-29's readable part")
	assert.Empty(t, p.AcquireAppend(nil, "c", 3, BatchOptimized, 0, logEnd, testLock, tens))

	require.NoError(t, p.Acknowledge("a", 0, 9, []int8{int8(AckRelease)}, testLock))
	got = p.AcquireAppend(nil, "c", 3, BatchOptimized, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{0, 2, 2}}, got, "released records: exactly three")
}

// TestRecordLimitAcquiresAtMostMax: in KIP-1206's record_limit mode max
// is a hard limit, new records and records made available again alike: a
// batch is cut where max ends, its rest acquired by the next fetch, and
// MaxLocks is never passed; batch_optimized, given the same batches,
// takes the batch whole.
func TestRecordLimitAcquiresAtMostMax(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 100})
	p := h.part(0)
	const logEnd = 250
	tens := func(off int64) (int64, bool) { return off/10*10 + 9, off < logEnd }
	one := func(off int64) (int64, bool) { return logEnd - 1, true } // a single batch, 0-249

	got := p.AcquireAppend(nil, "a", 3, RecordLimit, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{0, 2, 1}}, got, "three asked: three, the batch 0-9 cut")
	got = p.AcquireAppend(nil, "b", 4, RecordLimit, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{3, 6, 1}}, got, "the batch's rest goes on where the last fetch stopped")
	got = p.AcquireAppend(nil, "c", 2, BatchOptimized, 0, logEnd, testLock, tens)
	assert.Equal(t, []Range{{7, 9, 1}}, got, "batch_optimized: to the batch's end")

	require.NoError(t, p.Acknowledge("a", 0, 2, []int8{int8(AckRelease)}, testLock))
	got = p.AcquireAppend(nil, "d", 5, RecordLimit, 0, logEnd, testLock, one)
	assert.Equal(t, []Range{{0, 2, 2}, {10, 11, 1}}, got, "three released, then two new: five in all")
	got = p.AcquireAppend(nil, "d", 500, RecordLimit, 0, logEnd, testLock, one)
	assert.Equal(t, []Range{{12, 99, 1}}, got, "up to MaxLocks, the batch 0-249 cut there")
	assert.Equal(t, int64(100), p.End())
	assert.Empty(t, p.AcquireAppend(nil, "e", 0, RecordLimit, 0, logEnd, testLock, one), "nothing asked, nothing acquired")
}

// TestMaxLocksBoundsWhereABatchStarts: as in Kafka's SharePartition,
// MaxLocks bounds where an acquisition of new records starts, not where
// it ends: the batch of the last record max and the window's room allow
// is taken whole, past the bound (a batch is not cut, to be read and
// sent again for its rest, or split among members); nothing new is
// acquired once the window holds MaxLocks records or more, and records
// made available again in it still are.
func TestMaxLocksBoundsWhereABatchStarts(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 100})
	p := h.part(0)
	const logEnd = 1000
	batches := func(off int64) (int64, bool) { // 0-79, 80-279, 280-999
		switch {
		case off < 80:
			return 79, true
		case off < 280:
			return 279, true
		}
		return 999, off < logEnd
	}
	got := p.AcquireAppend(nil, "a", 30, BatchOptimized, 0, logEnd, testLock, batches)
	assert.Equal(t, []Range{{0, 79, 1}}, got, "the first batch, whole")
	got = p.AcquireAppend(nil, "b", 30, BatchOptimized, 0, logEnd, testLock, batches)
	assert.Equal(t, []Range{{80, 279, 1}}, got, "the next batch starts below the bound: whole, past it")
	assert.False(t, p.Acquirable(logEnd), "280 records in flight: nothing new")
	assert.Empty(t, p.AcquireAppend(nil, "c", 30, BatchOptimized, 0, logEnd, testLock, batches))

	require.NoError(t, p.Acknowledge("b", 100, 109, []int8{int8(AckRelease)}, testLock))
	assert.True(t, p.Acquirable(logEnd), "records made available again")
	got = p.AcquireAppend(nil, "c", 30, BatchOptimized, 0, logEnd, testLock, batches)
	assert.Equal(t, []Range{{100, 109, 2}}, got, "those only: the window is full")

	require.NoError(t, p.Acknowledge("a", 0, 79, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("b", 80, 99, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("c", 100, 109, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("b", 110, 199, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int64(200), p.Start())
	got = p.AcquireAppend(nil, "a", 30, BatchOptimized, 0, logEnd, testLock, batches)
	assert.Equal(t, []Range{{280, 999, 1}}, got, "80 in flight, room for 20: the batch of 280 whole")
	assert.Equal(t, int64(1000), p.End())
}

// TestAWindowIsBoundedByMaxWindow: a batch rounded up past MaxLocks stops
// where the window would hold more than maxWindow records.
func TestAWindowIsBoundedByMaxWindow(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	const logEnd = 1 << 20
	one := func(off int64) (int64, bool) { return logEnd - 1, true }
	got := p.AcquireAppend(nil, "a", 500, BatchOptimized, 0, logEnd, testLock, one)
	assert.Equal(t, []Range{{0, maxWindow - 1, 1}}, got)
	require.NoError(t, p.Acknowledge("a", 0, maxWindow-1, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int64(maxWindow), p.Start())
}

func TestAcceptAdvancesStartAndCancelsTheLock(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	require.Len(t, p.Acquire("a", 5, 0, 5, testLock), 1)
	require.NoError(t, p.Acknowledge("a", 0, 4, []int8{int8(AckAccept)}, testLock))
	assert.Equal(t, int64(5), p.Start(), "the start moves past acknowledged records")
	assert.Zero(t, h.tm.Stats().Pending, "the lock is cancelled once it holds nothing")
	h.advance(time.Hour)
	assert.Equal(t, int64(5), p.Start(), "nothing expires afterwards")
}

func TestAcknowledgeByAnotherMemberIsRefused(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	p.Acquire("a", 5, 0, 5, testLock)
	assert.ErrorIs(t, p.Acknowledge("b", 0, 0, []int8{1}, testLock), ErrInvalidRecordState)
	assert.ErrorIs(t, p.Acknowledge("a", 3, 7, []int8{1}, testLock), ErrInvalidRecordState, "past the end")
	assert.ErrorIs(t, p.Acknowledge("a", 2, 1, []int8{1}, testLock), ErrInvalidAcknowledgement)
	assert.ErrorIs(t, p.Acknowledge("a", 0, 2, []int8{1, 1}, testLock), ErrInvalidAcknowledgement, "one type per offset or one for all")
	assert.ErrorIs(t, p.Acknowledge("a", 0, 0, []int8{9}, testLock), ErrInvalidAcknowledgement)
	st, n := p.StateOf(0)
	assert.Equal(t, Acquired, st, "a refused batch changes nothing")
	assert.Equal(t, int16(1), n)
}

func TestPerOffsetTypes(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	p.Acquire("a", 4, 0, 4, testLock)
	require.NoError(t, p.Acknowledge("a", 0, 3, []int8{1, 2, 3, 0}, testLock))
	for off, want := range []State{Acknowledged, Available, Archived, Archived} {
		if off == 0 {
			continue // below the start, reported archived
		}
		st, _ := p.StateOf(int64(off))
		assert.Equal(t, want, st, "offset %d", off)
	}
	assert.Equal(t, int64(1), p.Start(), "the released record holds the start")
	assert.Equal(t, 1, h.wakes(testKey), "a release wakes waiting fetches")
	assert.Equal(t, []Range{{1, 1, 2}}, p.Acquire("b", 10, 0, 4, testLock), "redelivered, second delivery")
}

func TestLockExpiryReleasesAndWakes(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	p.Acquire("a", 3, 0, 3, testLock)
	require.NoError(t, p.Acknowledge("a", 0, 0, []int8{1}, testLock))
	before := h.wakes(testKey) // the start moved: the window may grow
	h.advance(testLock - time.Millisecond)
	st, _ := p.StateOf(1)
	assert.Equal(t, Acquired, st, "not before the lock's duration")
	h.advance(time.Millisecond)
	st, n := p.StateOf(1)
	assert.Equal(t, Available, st, "released at the lock's duration")
	assert.Equal(t, int16(1), n, "the delivery count is kept")
	assert.Equal(t, before+1, h.wakes(testKey), "the expiry wakes waiting fetches")
	assert.ErrorIs(t, p.Acknowledge("a", 1, 1, []int8{1}, testLock), ErrInvalidRecordState, "too late")
}

func TestDeliveryLimitArchives(t *testing.T) {
	h := newHarness(t, Config{DeliveryLimit: 3})
	p := h.part(0)
	for i := 1; i <= 3; i++ {
		got := p.Acquire("a", 1, 0, 1, testLock)
		require.Equal(t, []Range{{0, 0, int16(i)}}, got, "delivery %d", i)
		h.advance(testLock)
	}
	assert.Equal(t, int64(1), p.Start(), "archived after the third delivery, and passed")
	assert.Empty(t, p.Acquire("a", 1, 0, 1, testLock))
}

func TestRenewRestartsTheLock(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	p.Acquire("a", 2, 0, 2, testLock)
	h.advance(testLock / 2)
	require.NoError(t, p.Acknowledge("a", 0, 1, []int8{int8(AckRenew)}, testLock))
	h.advance(testLock/2 + time.Second)
	st, _ := p.StateOf(0)
	assert.Equal(t, Acquired, st, "the renewal moved the deadline")
	h.advance(testLock / 2)
	st, _ = p.StateOf(0)
	assert.Equal(t, Available, st)
}

func TestMaxLocksBoundsTheWindow(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 100})
	p := h.part(0)
	assert.Equal(t, []Range{{0, 99, 1}}, p.Acquire("a", 500, 0, 1000, testLock))
	assert.False(t, p.Acquirable(1000), "the window is full")
	require.NoError(t, p.Acknowledge("a", 0, 9, []int8{1}, testLock))
	assert.True(t, p.Acquirable(1000))
	assert.Equal(t, []Range{{100, 109, 1}}, p.Acquire("b", 500, 0, 1000, testLock))
}

func TestReleaseMemberAndLogStart(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.part(0)
	p.Acquire("a", 3, 0, 6, testLock)
	p.Acquire("b", 3, 0, 6, testLock)
	h.m.Release("g", "a")
	st, _ := p.StateOf(0)
	assert.Equal(t, Available, st, "a's records are released")
	st, _ = p.StateOf(3)
	assert.Equal(t, Acquired, st, "b's are not")
	assert.Equal(t, []Range{{6, 7, 1}}, p.Acquire("c", 5, 6, 8, testLock), "records below the log start are gone")
	assert.Equal(t, int64(6), p.Start())
	assert.Zero(t, h.tm.Stats().Pending-1, "b's lock went when its records did; c's is held")
}

func TestManyLocksAllCancelled(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 10000})
	p := h.part(0)
	for i := int64(0); i < 10000; i++ {
		require.Len(t, p.Acquire("a", 1, 0, 10000, testLock), 1)
	}
	assert.Equal(t, int64(1), h.tm.Stats().Pending, "10,000 locks due in one tick share one task")
	for i := int64(0); i < 10000; i++ {
		require.NoError(t, p.Acknowledge("a", i, i, []int8{1}, testLock))
	}
	assert.Zero(t, h.tm.Stats().Pending)
	assert.Equal(t, int64(10000), p.Start())
}

// TestRandomOperationsKeepTheWindowConsistent drives a partition with a
// fixed random mix of acquisitions, acknowledgements of every type, member
// releases, lock expiries and log-start moves, checking after each step
// that the count of available records the acquisitions rely on is the
// window's, that the start is never past an unsettled record, that the
// timer holds no more locks than acquisitions hold records, and that the
// lock slab agrees with the window (checkLocksLocked).
func TestRandomOperationsKeepTheWindowConsistent(t *testing.T) {
	h := newHarness(t, Config{DeliveryLimit: 3, MaxLocks: 100})
	p := h.part(0)
	rng := rand.New(rand.NewPCG(1, 2))
	members := []string{"a", "b", "c"}
	logStart, logEnd := int64(0), int64(0)
	for step := range 5000 {
		m := members[rng.IntN(len(members))]
		switch rng.IntN(6) {
		case 0:
			logEnd += int64(rng.IntN(20))
		case 1:
			p.Acquire(m, 1+rng.IntN(30), logStart, logEnd, testLock)
		case 2:
			first := p.Start() + int64(rng.IntN(20))
			_ = p.Acknowledge(m, first, first+int64(rng.IntN(5)), []int8{int8(rng.IntN(5))}, testLock)
		case 3:
			p.Release(m)
		case 4:
			h.advance(time.Duration(rng.IntN(int(testLock/time.Millisecond))) * time.Millisecond)
		case 5:
			if rng.IntN(10) == 0 && logStart < logEnd {
				logStart++
			}
		}
		p.mu.Lock()
		avail, held := 0, 0
		for _, r := range p.recs {
			switch r.state {
			case Available:
				avail++
			case Acquired:
				held++
			}
		}
		require.Equal(t, avail, p.avail, "step %d: the available count", step)
		require.LessOrEqual(t, h.tm.Stats().Pending, int64(held), "step %d: no lock outlives its records", step)
		if len(p.recs) > 0 {
			st := p.recs[0].state
			require.True(t, st == Available || st == Acquired, "step %d: the start stops at the first unsettled record", step)
		}
		require.LessOrEqual(t, len(p.recs), 100, "step %d: the window is bounded", step)
		checkLocksLocked(t, p, step)
		p.mu.Unlock()
	}
}
