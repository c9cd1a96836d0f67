package purgatory

import (
	"sync/atomic"
	"unsafe"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// answered counts the completions of the operations that waited (those
// listed after their first try; lifecycle.Counted), striped by the
// operation's page as retention's counts are, so that completions on two
// cores seldom share a counter. The lists count the same operations as
// they are listed, under a lock they take anyway; Pending is the
// difference, and costs the hot path this one uncontended atomic add.
type answered struct {
	stripes [answeredStripes]struct {
		n atomic.Int64
		_ [56]byte
	}
}

const answeredStripes = 8 // a power of two

// add counts the completion of s.
func (a *answered) add(s *lifecycle.State) {
	a.stripes[uintptr(unsafe.Pointer(s))>>13&(answeredStripes-1)].n.Add(1)
}

// total returns the completions counted, ever.
func (a *answered) total() int64 {
	var t int64
	for i := range a.stripes {
		t += a.stripes[i].n.Load()
	}
	return t
}

// Pending returns the number of operations submitted and not yet answered:
// those waiting for their condition, their deadline, their context or
// Close, and those CancelForKey handed back that their caller has not
// answered yet. An operation counts once however many keys it is watched
// under, from its submission until its callbacks have run; one completed
// by its first try at submission never counts. This is the count to read
// as "waiting now" (Watched counts watch entries, Delayed deadlines).
// Exact when nothing is being submitted or completed meanwhile;
// O(shards of the watch lists), each under its lock.
func (p *Purgatory[K]) Pending() int {
	done := p.obs.answered.total() // first: an operation is counted submitted before it completes
	return int(max(0, p.w.Submitted()-done))
}
