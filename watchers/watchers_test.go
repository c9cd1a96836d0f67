package watchers

import (
	"strconv"
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
	assert.Equal(t, 3, w.Watched(), "entries stay until the key's next check or a purge")
	assert.Equal(t, 0, w.TryCompleteWatched(k))
	assert.Equal(t, 1, w.Watched(), "k's list compacted, and left idle")
	assert.Equal(t, 1, w.Keys())
	assert.Equal(t, 1, w.Purge(), "a's entry under the other key")
	assert.Equal(t, 0, w.Keys())
}

// empty makes key's list hold only completed entries, then checks key: the
// check compacts the list to nothing.
func (f *fixture) empty(t *testing.T, w *Watchers[string], key string) {
	t.Helper()
	no := false
	s := f.op(t, &no)
	w.Watch(key, s)
	s.ForceComplete()
	require.Equal(t, 0, w.TryCompleteWatched(key))
}

func TestRemoveReturnsPendingOnly(t *testing.T) {
	f := newFixture(t)
	w := New[string](0)
	no := false
	a, b := f.op(t, &no), f.op(t, &no)
	w.Watch("k", a)
	w.Watch("k", b)
	a.ForceComplete()
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
		s.ForceComplete()
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
		s.ForceComplete()
	}
	w.Purge()
	l := w.shards[0].lists["k"]
	assert.Len(t, l.ops, 10)
	assert.LessOrEqual(t, cap(l.ops), 20, "the burst's memory is returned")
}

// TestWatchRacesKeyRemoval: a check empties a key's list (its one entry
// completed elsewhere) and drops it, while another goroutine watches a new
// operation under the same key. The new watch is never lost: it is in the
// old list (which then is not dropped) or in a new one.
func TestWatchRacesKeyRemoval(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	no := false
	for i := range 2000 {
		done := f.op(t, &no)
		w.Watch("k", done)
		done.ForceComplete()
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
	w.Purge()
	assert.Equal(t, 0, w.Watched(), "every operation completed")
	assert.Equal(t, 0, w.Keys())
}

// A check leaves the entries it completes, and the key's list with them,
// so that the key's next watch finds its list; the check after compacts
// the list to nothing and drops it, keeping it for a new key.
func TestEmptiedListIsDroppedAndReused(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	yes := true
	w.Watch("k", f.op(t, &yes))
	l := w.shards[0].lists["k"]
	assert.Equal(t, 1, w.TryCompleteWatched("k"))
	assert.Equal(t, 1, w.Watched(), "the entry stays until the next check")
	w.Watch("k", f.op(t, &yes))
	assert.Same(t, l, w.shards[0].lists["k"], "the next watch finds the key's list")
	assert.Equal(t, 1, w.TryCompleteWatched("k"), "only the new entry is tried")
	assert.Equal(t, 1, w.Watched(), "the older entry was compacted")

	assert.Equal(t, 0, w.TryCompleteWatched("k"))
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())
	lists, _ := w.Counts()
	assert.Equal(t, 0, lists, "the emptied list is dropped")

	w.Watch("other", f.op(t, &yes))
	assert.Same(t, l, w.shards[0].lists["other"], "a new key reuses the dropped list")
}

// Keys watched once (one per request) do not pile up: each is dropped when
// a check or a purge finds its list empty.
func TestEmptiedListsDoNotPileUp(t *testing.T) {
	f := newFixture(t)
	w := New[string](1)
	for k := range 24 {
		f.empty(t, w, strconv.Itoa(k))
	}
	lists, _ := w.Counts()
	assert.Equal(t, 0, lists)
	assert.LessOrEqual(t, len(w.shards[0].free), maxFree)
}

// WatchAll watches under every key and counts the operation once until the
// next purge; it stops at an operation completed meanwhile.
func TestWatchAllCountsOperationsOnce(t *testing.T) {
	f := newFixture(t)
	w := New[string](4)
	no := false
	w.WatchAll([]string{"a", "b", "c"}, f.op(t, &no))
	w.WatchAll([]string{"b"}, f.op(t, &no))
	_, added := w.Counts()
	assert.Equal(t, 2, added)
	assert.Equal(t, 4, w.Watched())

	done := f.op(t, &no)
	done.ForceComplete()
	w.WatchAll([]string{"x", "y", "z"}, done)
	assert.Equal(t, 5, w.Watched(), "completed: watched under its first key only")

	w.Purge()
	_, added = w.Counts()
	assert.Equal(t, 0, added, "a purge restarts the count")
	assert.Equal(t, 4, w.Watched())
}
