package share

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePersister keeps snapshots in memory; its writes wait until release
// answers them, and a leader epoch below the stored one is fenced.
type fakePersister struct {
	mu      sync.Mutex
	states  map[Key]Snapshot
	epochs  map[Key]int32
	writes  []Snapshot
	waiting []func()
}

func newFakePersister() *fakePersister {
	return &fakePersister{states: make(map[Key]Snapshot), epochs: make(map[Key]int32)}
}

func (f *fakePersister) Read(k Key, leaderEpoch int32, done func(Snapshot, error)) {
	f.mu.Lock()
	s, ok := f.states[k]
	if !ok {
		s.StartOffset = -1
	}
	f.epochs[k] = max(f.epochs[k], leaderEpoch)
	f.mu.Unlock()
	done(s, nil)
}

func (f *fakePersister) Initialize(k Key, stateEpoch int32, start int64, done func(error)) {
	f.mu.Lock()
	f.states[k] = Snapshot{StateEpoch: stateEpoch, StartOffset: start}
	f.mu.Unlock()
	done(nil)
}

func (f *fakePersister) Write(k Key, leaderEpoch int32, s Snapshot, done func(error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if leaderEpoch < f.epochs[k] {
		f.waiting = append(f.waiting, func() { done(fmt.Errorf("%w: leader epoch %d", ErrFenced, leaderEpoch)) })
		return
	}
	f.writes = append(f.writes, s)
	f.waiting = append(f.waiting, func() {
		f.mu.Lock()
		f.states[k] = s
		f.mu.Unlock()
		done(nil)
	})
}

// release answers the writes waiting, and those they start, until none is
// left.
func (f *fakePersister) release() {
	for {
		f.mu.Lock()
		w := f.waiting
		f.waiting = nil
		f.mu.Unlock()
		if len(w) == 0 {
			return
		}
		for _, answer := range w {
			answer()
		}
	}
}

func (f *fakePersister) written() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

// TestPersistedStateSurvivesTheLeader has one leader acquire and
// acknowledge part of a window and a second leader, at a later epoch,
// take the state over: the acknowledged records stay done, those
// acquired but not acknowledged come back available with their delivery
// counts.
func TestPersistedStateSurvivesTheLeader(t *testing.T) {
	f := newFakePersister()
	h := newHarness(t, Config{Persister: f})
	p := h.m.Lead(testKey, 1, func() int64 { return 0 })
	require.Equal(t, []Range{{0, 5, 1}}, p.Acquire("a", 6, 0, 10, testLock), "initialized at the offset given, ready")
	require.NoError(t, p.Acknowledge("a", 0, 1, []int8{int8(AckAccept)}, testLock))
	require.NoError(t, p.Acknowledge("a", 2, 2, []int8{int8(AckRelease)}, testLock))
	var err error
	acked := false
	p.Persist(func(e error) { err, acked = e, true })
	assert.False(t, acked, "answered once durable")
	f.release()
	require.True(t, acked)
	require.NoError(t, err)

	// A new leader (here the same Manager, at the next epoch).
	q := h.m.Lead(testKey, 2, func() int64 { return 99 })
	require.NotSame(t, p, q)
	assert.Equal(t, int64(2), q.Start(), "the acknowledged head is done with")
	assert.Equal(t, int64(6), q.End())
	for off, want := range map[int64]int16{2: 1, 3: 1, 5: 1} {
		st, n := q.StateOf(off)
		assert.Equal(t, Available, st, "offset %d", off)
		assert.Equal(t, want, n, "offset %d keeps its delivery count", off)
	}
	got := q.Acquire("b", 10, 0, 10, testLock)
	assert.Equal(t, []Range{{2, 5, 2}, {6, 9, 1}}, got, "redelivered first, counted again")

	// The old leader's writes are fenced: it is dropped.
	p.Persist(nil)
	f.release()
	assert.Empty(t, p.Acquire("a", 10, 0, 10, testLock))
}

// TestAWindowPastMaxLocksIsRestoredWhole: a window that a batch took
// past MaxLocks (Kafka's bound on where an acquisition starts) is
// restored whole by the next leader: its records past the bound keep
// their states, none acknowledged is delivered again.
func TestAWindowPastMaxLocksIsRestoredWhole(t *testing.T) {
	f := newFakePersister()
	h := newHarness(t, Config{Persister: f, MaxLocks: 100})
	p := h.m.Lead(testKey, 1, func() int64 { return 0 })
	batch := func(int64) (int64, bool) { return 299, true }
	require.Equal(t, []Range{{0, 299, 1}}, p.AcquireAppend(nil, "a", 10, BatchOptimized, 0, 300, testLock, batch))
	require.NoError(t, p.Acknowledge("a", 150, 299, []int8{int8(AckAccept)}, testLock))
	p.Persist(nil)
	f.release()

	q := h.m.Lead(testKey, 2, func() int64 { return 0 })
	assert.Equal(t, int64(0), q.Start())
	assert.Equal(t, int64(300), q.End(), "the whole window, past MaxLocks")
	st, _ := q.StateOf(299)
	assert.Equal(t, Acknowledged, st)
	assert.Equal(t, []Range{{0, 149, 2}}, q.Acquire("b", 500, 0, 300, testLock), "redelivered: those acquired, not those acknowledged")
	assert.Empty(t, q.Acquire("b", 500, 0, 300, testLock))
}

// TestPersistCoalesces asks for writes while one is under way: they wait
// for it, and one more write holds all their changes.
func TestPersistCoalesces(t *testing.T) {
	f := newFakePersister()
	h := newHarness(t, Config{Persister: f})
	p := h.m.Lead(testKey, 0, func() int64 { return 0 })
	require.Len(t, p.Acquire("a", 10, 0, 10, testLock), 1)
	answered := 0
	for off := range int64(5) {
		require.NoError(t, p.Acknowledge("a", off, off, []int8{int8(AckAccept)}, testLock))
		p.Persist(func(err error) {
			assert.NoError(t, err)
			answered++
		})
	}
	assert.Equal(t, 1, f.written(), "one write under way")
	f.release()
	assert.Equal(t, 5, answered)
	assert.Equal(t, 2, f.written(), "the four that waited went in one")
	assert.Equal(t, int64(5), f.states[testKey].StartOffset)
}

// TestLockExpiryIsPersisted lets a lock expire: the released records are
// written, available with their delivery count.
func TestLockExpiryIsPersisted(t *testing.T) {
	f := newFakePersister()
	h := newHarness(t, Config{Persister: f})
	p := h.m.Lead(testKey, 0, func() int64 { return 0 })
	require.Len(t, p.Acquire("a", 2, 0, 2, testLock), 1)
	h.advance(testLock)
	f.release()
	assert.Equal(t, Snapshot{StartOffset: 0, Batches: []Batch{{First: 0, Last: 1, State: Available, DeliveryCount: 1}}},
		f.states[testKey])
}

// failingPersister fails every call.
type failingPersister struct{}

var errUnavailable = errors.New("coordinator not available")

func (failingPersister) Read(_ Key, _ int32, done func(Snapshot, error)) {
	done(Snapshot{}, errUnavailable)
}
func (failingPersister) Initialize(_ Key, _ int32, _ int64, done func(error)) {
	done(errUnavailable)
}
func (failingPersister) Write(_ Key, _ int32, _ Snapshot, done func(error)) { done(errUnavailable) }

// TestFailedLoadIsTriedAgain: a partition whose state cannot be read
// hands nothing out and is dropped, so that its next use reads again.
func TestFailedLoadIsTriedAgain(t *testing.T) {
	h := newHarness(t, Config{Persister: failingPersister{}})
	p := h.m.Lead(testKey, 0, func() int64 { return 0 })
	assert.False(t, p.Acquirable(10))
	assert.Empty(t, p.Acquire("a", 10, 0, 10, testLock))
	assert.Nil(t, h.m.Get(testKey), "dropped")
	assert.Equal(t, 1, h.wakes(testKey), "its waiting fetches are told")
	assert.NotSame(t, p, h.m.Lead(testKey, 0, func() int64 { return 0 }), "made again")
}

// asyncPersister answers each write on a goroutine of its own, so that
// writes end while acknowledgements ask for more; outstanding counts the
// writes not yet answered, and those they start.
type asyncPersister struct {
	fakePersister
	outstanding sync.WaitGroup
}

func (a *asyncPersister) Write(k Key, _ int32, s Snapshot, done func(error)) {
	a.outstanding.Add(1)
	go func() {
		defer a.outstanding.Done()
		a.mu.Lock()
		a.states[k] = s
		a.writes = append(a.writes, s)
		a.mu.Unlock()
		done(nil) // may start the next write, counted before this one ends
	}()
}

// TestPersistLosesNoChange acknowledges and persists from several
// goroutines while the writes end on others: once the last write is
// answered, the stored state holds every acknowledgement, however a
// write's end and a Persist's request crossed.
func TestPersistLosesNoChange(t *testing.T) {
	a := &asyncPersister{fakePersister: *newFakePersister()}
	h := newHarness(t, Config{Persister: a, MaxLocks: 1000})
	p := h.m.Lead(testKey, 0, func() int64 { return 0 })
	const n, workers = 1000, 4
	require.Len(t, p.Acquire("a", n, 0, n, testLock), 1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for off := int64(w); off < n; off += workers {
				assert.NoError(t, p.Acknowledge("a", off, off, []int8{int8(AckAccept)}, testLock))
				p.Persist(nil)
			}
		})
	}
	wg.Wait()
	a.outstanding.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.Equal(t, int64(n), a.states[testKey].StartOffset, "the last write holds every acknowledgement")
}
