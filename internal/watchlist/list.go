package watchlist

import "github.com/gopurgatory/purgatory/internal/lifecycle"

// list is the operations watched under one key, oldest first.
//
// REQUIRES: every method and field access runs with sh.mu held.
//
// One per key watched: its fields are what a key costs beside its entries
// (48 bytes with a string key), so the shard it belongs to is kept by the
// records that need it (eager mode's), not here.
type list[K comparable] struct {
	ops      []*lifecycle.State
	key      K     // the key whose map entry it is, while it is one
	checking int32 // eager mode: checks trying its operations now
}

// minShrink is the capacity under which a list keeps its slice however empty
// it gets; above it, a list a quarter full is reallocated so that the memory
// of a burst is returned.
const minShrink = 64

// add appends s. A full slice is compacted before it is grown, so completed
// entries never make a list grow: compacting n entries happens once per n
// appends at most, which keeps watching O(1) amortised. It returns how many
// completed entries it dropped.
func (l *list[K]) add(s *lifecycle.State) (removed int) {
	if len(l.ops) == cap(l.ops) && len(l.ops) >= 8 {
		removed = l.compact()
	}
	l.ops = append(l.ops, s)
	return removed
}

// compact drops the entries of completed operations, keeping order, and
// returns how many it dropped.
func (l *list[K]) compact() int {
	j := 0
	for i, s := range l.ops {
		if lifecycle.IsPending(s) {
			if i != j {
				l.ops[j] = s
			}
			j++
		}
	}
	return l.truncate(j)
}

// truncate keeps the first j entries, which compacting kept, and returns
// how many it dropped. A list emptied to a quarter of a big capacity gives
// its memory back.
func (l *list[K]) truncate(j int) int {
	removed := len(l.ops) - j
	if removed == 0 {
		return 0
	}
	// A loop, not clear: the tail is short (a check's or two), and a
	// pointer store is cheaper than a call into the runtime.
	for i := j; i < len(l.ops); i++ {
		l.ops[i] = nil
	}
	l.ops = l.ops[:j]
	if c := cap(l.ops); c > minShrink && j < c/4 {
		l.ops = append(make([]*lifecycle.State, 0, 2*j), l.ops...)
	}
	return removed
}

// listing is an operation's record of the lists it is watched in, kept in
// its extras in eager mode.
type listing[K comparable] struct {
	lists  []listed[K]
	inline [2]listed[K]
}

// listed is a list an operation is watched in, and the shard it belongs to
// for good (a list is reused only within its shard).
type listed[K comparable] struct {
	l  *list[K]
	sh *shard[K]
}

func newListing[K comparable]() any {
	l := &listing[K]{}
	l.lists = l.inline[:0]
	return l
}
