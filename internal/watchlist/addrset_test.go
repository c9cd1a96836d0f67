package watchlist

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddrSetHoldsWhatWasAdded(t *testing.T) {
	var s AddrSet
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 1000, 50_000, 10} { // grows, then keeps or drops its table
		in := map[uintptr]bool{}
		groups := make([][]uintptr, 3)
		for i := range n {
			a := uintptr(rng.Uint64()&^7 | 8) // aligned, never 0
			in[a] = true
			groups[i%3] = append(groups[i%3], a, a) // duplicates count once
		}
		s.Reset(42, groups...)
		assert.Equal(t, len(in), s.Len())
		assert.Equal(t, uint64(42), s.since)
		assert.LessOrEqual(t, 2*s.Len(), len(s.slots), "at most half full")
		for a := range in {
			require.True(t, s.has(a))
		}
		for range 1000 {
			a := uintptr(rng.Uint64()&^7 | 8)
			assert.Equal(t, in[a], s.has(a))
		}
	}
	s.Reset(0)
	assert.LessOrEqual(t, len(s.slots), 128, "a burst's table is not kept")
}

// PurgeKnown drops the entries of the operations in the set, and no other,
// reading none of them while no collection cycle has completed since the
// set's addresses were recorded; once one has, it confirms each by reading
// it. The test puts a pending operation's address in the set (which a
// purgatory never does) to see which of the two happened.
func TestPurgeKnownReadsNothingUntilACycleCompletes(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no cycle but the test's own
	for _, cycle := range []bool{false, true} {
		f := newFixture(t)
		w := New[key](4, false)
		ready := false
		k1, k2 := key{"t", 1}, key{"t", 2}
		done, pending, unknown := f.op(t, &ready, 2), f.op(t, &ready, 2), f.op(t, &ready, 1)
		w.WatchAll([]key{k1, k2}, done)
		w.WatchAll([]key{k1, k2}, pending)
		w.WatchAll([]key{k1}, unknown)
		require.True(t, done.ForceComplete())
		require.True(t, unknown.ForceComplete())

		var set AddrSet
		set.Reset(GCCycles(), []uintptr{Addr(done), Addr(pending)})
		if cycle {
			runtime.GC()
		}
		dropped := w.PurgeKnown(&set)
		if cycle {
			assert.Equal(t, 2, dropped, "confirmed: the pending operation keeps its entries")
			assert.Equal(t, 3, w.Watched(), "and the completed one missing from the set keeps its own")
		} else {
			assert.Equal(t, 4, dropped, "unread: whatever is in the set goes")
			assert.Equal(t, 1, w.Watched())
		}
		assert.Equal(t, int64(dropped), w.Dropped(), "counted as dropped")
		runtime.KeepAlive(pending)
	}
}
