package watchlist

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

func TestWatchCheckRemove(t *testing.T) {
	f := newFixture(t)
	w := New[key](4, false)
	k := key{"orders", 0}
	ready := false
	a, b := f.op(t, &ready, 2), f.op(t, &ready)
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
	w := New[string](0, false)
	no := false
	a, b := f.op(t, &no), f.op(t, &no)
	w.Watch("k", a)
	w.Watch("k", b)
	a.ForceComplete()
	assert.Equal(t, []*lifecycle.State{b}, w.Remove("k"))
	assert.Nil(t, w.Remove("k"))
	assert.Equal(t, 0, w.Watched())
}

func TestRemoveAllOncePerOperation(t *testing.T) {
	f := newFixture(t)
	w := New[int](8, false)
	no := false
	var ops []*lifecycle.State
	for i := range 10 {
		s := f.op(t, &no, 3)
		for k := range 3 {
			w.Watch(i*10+k, s)
		}
		ops = append(ops, s)
	}
	ops[0].ForceComplete() // completed before: its entries were garbage
	got := w.RemoveAll()
	assert.ElementsMatch(t, ops[1:], got)
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())

	// Answered after their entries went (as Close does), the operations
	// leave no garbage count behind: nothing is listed any more.
	for _, s := range got {
		lifecycle.CompleteWith(s, lifecycle.Closed)
	}
	assert.Zero(t, f.obs.garbage(w))
}

func TestFullListCompactsBeforeGrowing(t *testing.T) {
	f := newFixture(t)
	w := New[string](1, false)
	no := false
	var ops []*lifecycle.State
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
	w := New[string](1, false)
	no := false
	var ops []*lifecycle.State
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
	w := New[string](1, false)
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
		require.Equal(t, []*lifecycle.State{late}, w.Remove("k"), "round %d", i)
	}
}

func TestConcurrentWatchAndComplete(t *testing.T) {
	f := newFixture(t)
	w := New[int](16, false)
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
	w := New[string](1, false)
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
	assert.Empty(t, w.shards[0].lists, "the emptied list is dropped")

	w.Watch("other", f.op(t, &yes))
	assert.Same(t, l, w.shards[0].lists["other"], "a new key reuses the dropped list")
}

// Keys watched once (one per request) do not pile up: each is dropped when
// a check or a purge finds its list empty.
func TestEmptiedListsDoNotPileUp(t *testing.T) {
	f := newFixture(t)
	w := New[string](1, false)
	for k := range 24 {
		f.empty(t, w, strconv.Itoa(k))
	}
	assert.Empty(t, w.shards[0].lists)
	assert.LessOrEqual(t, len(w.shards[0].free), maxFree)
}

// WatchAll watches under every key, even once the operation completed:
// its submission counted every entry, and the lists count what they drop,
// so that the garbage is known exactly.
func TestGarbageIsCountedExactly(t *testing.T) {
	f := newFixture(t)
	w := New[string](4, false)
	no, yes := false, true
	a := f.op(t, &no, 3)
	w.WatchAll([]string{"a", "b", "c"}, a)
	b := f.op(t, &yes)
	w.WatchAll([]string{"b"}, b)
	assert.Equal(t, 4, w.Watched())
	assert.Zero(t, f.obs.garbage(w))

	done := f.op(t, &no, 3)
	lifecycle.CompleteWith(done, lifecycle.Closed)
	w.WatchAll([]string{"x", "y", "z"}, done)
	assert.Equal(t, 7, w.Watched(), "completed: watched under every key all the same")
	assert.EqualValues(t, 3, f.obs.garbage(w), "its three entries are garbage")

	assert.Equal(t, 1, w.TryCompleteWatched("b"))
	assert.EqualValues(t, 4, f.obs.garbage(w), "b's entry stays until b's next check")
	assert.Equal(t, 0, w.TryCompleteWatched("b"))
	assert.EqualValues(t, 3, f.obs.garbage(w), "dropped by the check")

	pending := w.Remove("a")
	assert.Equal(t, []*lifecycle.State{a}, pending)
	a.ForceComplete()
	assert.EqualValues(t, 5, f.obs.garbage(w), "a left its two other entries; the removed one was counted out")

	assert.Equal(t, 5, w.Purge())
	assert.Zero(t, f.obs.garbage(w))
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())
}
