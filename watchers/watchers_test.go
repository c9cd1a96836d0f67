package watchers

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

type key struct {
	topic     string
	partition int32
}

// fixture makes started operations whose condition a flag controls.
type fixture struct {
	tm *timer.Timer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tm, err := timer.New(timer.WithClock(timer.NewManualClock(0)))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	return &fixture{tm: tm}
}

func (f *fixture) op(t *testing.T, ready *bool) *operation.State {
	t.Helper()
	op := operation.NewFunc(func() bool { return *ready }, nil, nil)
	s, err := operation.Start(op, f.tm, nil)
	require.NoError(t, err)
	return s
}

func TestWatchCheckRemove(t *testing.T) {
	f := newFixture(t)
	w := New[key](4)
	k := key{"orders", 0}
	ready := false
	a, b := f.op(t, &ready), f.op(t, &ready)
	w.Watch(k, a)
	w.Watch(k, b)
	w.Watch(key{"orders", 1}, a)
	assert.Equal(t, 3, w.Watched())
	assert.Equal(t, 2, w.Keys())

	assert.Equal(t, 0, w.TryCompleteWatched(k))
	assert.Equal(t, 0, w.TryCompleteWatched(key{"missing", 0}))
	ready = true
	assert.Equal(t, 2, w.TryCompleteWatched(k))
	assert.Equal(t, 1, w.Watched(), "k's list compacted and dropped")
	assert.Equal(t, 1, w.Keys())
	assert.Equal(t, 1, w.Purge(), "a's entry under the other key")
	assert.Equal(t, 0, w.Keys())
}

func TestRemoveReturnsPendingOnly(t *testing.T) {
	f := newFixture(t)
	w := New[string](0)
	no := false
	a, b := f.op(t, &no), f.op(t, &no)
	w.Watch("k", a)
	w.Watch("k", b)
	operation.Of(a).OperationState().ForceComplete()
	assert.Equal(t, []*operation.State{b}, w.Remove("k"))
	assert.Nil(t, w.Remove("k"))
	assert.Equal(t, 0, w.Watched())
}

func TestRemoveAllOncePerOperation(t *testing.T) {
	f := newFixture(t)
	w := New[int](8)
	no := false
	var ops []*operation.State
	for i := range 10 {
		s := f.op(t, &no)
		for k := range 3 {
			w.Watch(i*10+k, s)
		}
		ops = append(ops, s)
	}
	got := w.RemoveAll()
	assert.ElementsMatch(t, ops, got)
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())
}

func TestFullListCompactsBeforeGrowing(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	no := false
	var ops []*operation.State
	for range 8 {
		s := f.op(t, &no)
		w.Watch("k", s)
		ops = append(ops, s)
	}
	l := w.shards[0].lists["k"]
	capBefore := cap(l.ops)
	for _, s := range ops[:len(ops)-1] {
		operation.Of(s).OperationState().ForceComplete()
	}
	for range cap(l.ops) - len(l.ops) + 1 {
		w.Watch("k", f.op(t, &no))
	}
	assert.Equal(t, capBefore, cap(l.ops), "completed entries made room: no growth")
	assert.Equal(t, len(l.ops), w.Watched())
}

func TestEmptiedListShrinks(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	no := false
	var ops []*operation.State
	for range 1000 {
		s := f.op(t, &no)
		w.Watch("k", s)
		ops = append(ops, s)
	}
	for _, s := range ops[10:] {
		operation.Of(s).OperationState().ForceComplete()
	}
	w.Purge()
	l := w.shards[0].lists["k"]
	assert.Len(t, l.ops, 10)
	assert.LessOrEqual(t, cap(l.ops), 20, "the burst's memory is returned")
}

// TestWatchRacesKeyRemoval: a key's list empties and is dropped while
// another goroutine watches a new operation under the same key. The new
// watch is never lost: it is in the old list (which then is not dropped) or
// in a new one.
func TestWatchRacesKeyRemoval(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	yes, no := true, false
	for i := range 2000 {
		w.Watch("k", f.op(t, &yes))
		late := f.op(t, &no)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); w.TryCompleteWatched("k") }()
		go func() { defer wg.Done(); w.Watch("k", late) }()
		wg.Wait()
		require.Equal(t, []*operation.State{late}, w.Remove("k"), "round %d", i)
	}
}

func TestConcurrentWatchAndComplete(t *testing.T) {
	f := newFixture(t)
	w := New[int](16)
	yes := true
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				w.Watch((g*2000+i)%97, f.op(t, &yes))
				w.TryCompleteWatched((g + i) % 97)
			}
		}()
	}
	wg.Wait()
	for k := range 97 {
		w.TryCompleteWatched(k)
	}
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())
}
