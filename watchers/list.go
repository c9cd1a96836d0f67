package watchers

import "github.com/gopurgatory/purgatory/operation"

// list is the operations watched under one key, oldest first. An entry is a
// pointer to the operation's State: eight bytes per key watched, and no
// allocation beyond the slice's amortised growth.
//
// REQUIRES: every method runs with the owning shard's mu held.
type list struct {
	ops []*operation.State
}

// minShrink is the capacity under which a list keeps its slice however empty
// it gets; above it, a list a quarter full is reallocated so that the memory
// of a burst is returned.
const minShrink = 64

// add appends s. A full slice is compacted before it is grown, so completed
// entries never make a list grow: compacting n entries happens once per n
// appends at most, which keeps watching O(1) amortised.
func (l *list) add(s *operation.State) (removed int) {
	if len(l.ops) == cap(l.ops) && len(l.ops) >= 8 {
		removed = l.compact()
	}
	l.ops = append(l.ops, s)
	return removed
}

// compact drops the entries of completed operations, keeping order, and
// returns how many it dropped.
func (l *list) compact() int {
	j := 0
	for i, s := range l.ops {
		if operation.IsPending(s) {
			if i != j {
				l.ops[j] = s
			}
			j++
		}
	}
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
		l.ops = append(make([]*operation.State, 0, 2*j), l.ops...)
	}
	return removed
}
