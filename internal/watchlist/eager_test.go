package watchlist

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// newEager returns eager watchers whose fixture releases each operation as
// it finishes, as an eager purgatory's observer does.
func newEager(t *testing.T, shards int) (*fixture, *Watchers[string]) {
	t.Helper()
	f := newFixture(t)
	w := New[string](shards, true)
	f.obs.release = w.Release
	return f, w
}

func TestEagerReleaseLeavesNoEntry(t *testing.T) {
	f, w := newEager(t, 4)
	no := false
	a := f.op(t, &no, 3)
	w.WatchAll([]string{"a", "b", "c"}, a)
	b := f.op(t, &no)
	w.Watch("b", b)
	require.Equal(t, 4, w.Watched())

	a.ForceComplete()
	assert.Equal(t, 1, w.Watched(), "a left every list as it finished")
	assert.Equal(t, 1, w.Keys(), "the lists it emptied were dropped")
	assert.Zero(t, f.obs.garbage(w))
}

func TestEagerCheckCompactsOnceAtTheEnd(t *testing.T) {
	f, w := newEager(t, 1)
	yes, no := true, false
	var live []*lifecycle.State
	for i := range 100 {
		ready := &yes
		if i%4 == 0 {
			ready = &no
		}
		s := f.op(t, ready)
		w.Watch("k", s)
		if ready == &no {
			live = append(live, s)
		}
	}
	assert.Equal(t, 75, w.TryCompleteWatched("k"))
	assert.Equal(t, 25, w.Watched(), "the completed entries went before the check returned")
	assert.Equal(t, live, w.shards[0].lists["k"].ops, "in order")
	assert.Zero(t, f.obs.garbage(w))
}

func TestEagerWatchOfAFinishedOperationAddsNothing(t *testing.T) {
	f, w := newEager(t, 1)
	no := false
	s := f.op(t, &no, 2)
	s.ForceComplete()
	w.WatchAll([]string{"a", "b"}, s)
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())
	assert.Zero(t, f.obs.garbage(w))
}

// A completion racing the watch, the check and the removal of its keys:
// once all are done, no list holds a completed operation.
func TestEagerRacesLeaveNoGarbage(t *testing.T) {
	f, w := newEager(t, 2)
	yes := true
	for i := range 1000 {
		no := false
		s := f.op(t, &no, 3)
		other := f.op(t, &yes)
		var wg sync.WaitGroup
		wg.Go(func() { w.WatchAll([]string{"a", "b", "c"}, s) })
		wg.Go(func() { s.ForceComplete() })
		wg.Go(func() { w.Watch("b", other); w.TryCompleteWatched("b") })
		if i%2 == 0 {
			wg.Go(func() { w.Remove("c") })
		}
		wg.Wait()
		w.TryCompleteWatched("b")
		require.Zero(t, w.Watched(), "round %d: every entry left as its operation finished", i)
		require.Zero(t, f.obs.garbage(w), "round %d", i)
	}
}
