package purgatory

import (
	"sync"
	"unsafe"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/internal/watchlist"
)

// tally is what completions record, striped by the operation's page (as
// the timer picks its shards) so that completions on two cores seldom
// share a stripe: how many of the operations that waited were answered
// (for Pending), how many watch entries completions left in lists (for
// retention), and which operations left them (for the next purge, see
// watchlist.AddrSet). One completion takes its stripe's lock once: the
// cost of the two atomic adds it replaced.
type tally struct {
	stripes [tallyStripes]stripe
	spares  [tallyStripes][]uintptr // the stripes' other slices; the purger's
	// lastTake is the garbage collector's count of completed cycles when
	// the last take began. The purger's, as spares.
	lastTake uint64
}

const tallyStripes = 8 // a power of two

type stripe struct {
	mu       sync.Mutex // guards the following
	answered int64      // completions of operations that waited, ever
	left     int64      // watch entries left behind by completions, ever
	// done holds the addresses of the operations that left entries since
	// the last purge took them, up to maxDone (then lossy is set: a purge
	// must read every entry). Addresses keep nothing reachable (see
	// watchlist.AddrSet for why they are still safe to look for).
	done     []uintptr
	doneLeft int64 // the entries the operations in done left
	lossy    bool
	_        [71]byte // 128 bytes a stripe: wherever the array starts, no two stripes share a cache line
}

func (t *tally) stripe(s *lifecycle.State) *stripe {
	return &t.stripes[uintptr(unsafe.Pointer(s))>>13&(tallyStripes-1)]
}

// record counts s's completion: answered, when it waited (counted), and
// the listed entries it left behind, remembering s for the next purge when
// collect is set (a purge interval). It returns the stripe's count of
// entries left behind before and after, for retention's step check.
func (t *tally) record(s *lifecycle.State, counted bool, listed int, collect bool, maxDone int) (before, after int64) {
	st := t.stripe(s)
	st.mu.Lock()
	if counted {
		st.answered++
	}
	before = st.left
	if listed > 0 {
		st.left += int64(listed)
		if collect && len(st.done) < maxDone {
			st.done = append(st.done, watchlist.Addr(s))
			st.doneLeft += int64(listed)
		} else {
			st.lossy = true // the next purge must read every entry
		}
	}
	after = st.left
	st.mu.Unlock()
	return before, after
}

// answered returns the completions of operations that waited, ever.
func (t *tally) answered() int64 { return t.sum(func(st *stripe) int64 { return st.answered }) }

// left returns the watch entries completions have left behind, ever.
func (t *tally) left() int64 { return t.sum(func(st *stripe) int64 { return st.left }) }

// recorded returns the entries left by the operations recorded since the
// last take.
func (t *tally) recorded() int64 { return t.sum(func(st *stripe) int64 { return st.doneLeft }) }

// sum adds up field over the stripes, each read under its lock.
func (t *tally) sum(field func(*stripe) int64) int64 {
	var n int64
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		n += field(st)
		st.mu.Unlock()
	}
	return n
}

// take moves the recorded addresses into set (nil: a purge that reads
// every entry, and needs none), and reports whether they are all of those
// recorded since the last take (no stripe was lossy). Each
// stripe's slice is swapped with a spare one, so that taking allocates
// nothing and holds each lock for a few stores; a slice left much bigger
// than what it held is dropped, so that a burst's memory is returned. The
// set is stamped with the garbage collector's count of cycles at the
// previous take, before any of its addresses was recorded.
//
// REQUIRES: the purgatory's purgeMu held (the spares are the purger's).
func (t *tally) take(set *watchlist.AddrSet) (complete bool) {
	complete = true
	since := t.lastTake
	t.lastTake = watchlist.GCCycles()
	for i := range t.stripes {
		st := &t.stripes[i]
		spare := t.spares[i][:0]
		st.mu.Lock()
		st.done, t.spares[i] = spare, st.done
		st.doneLeft = 0
		if st.lossy {
			complete, st.lossy = false, false
		}
		st.mu.Unlock()
	}
	if set != nil && complete {
		set.Reset(since, t.spares[:]...)
	}
	for i, sp := range t.spares {
		if cap(sp) > 1024 && cap(sp) > 4*len(sp) {
			t.spares[i] = nil
		}
	}
	return complete
}

// forget drops the addresses recorded since the last take and marks the
// record incomplete: the next purge reads every entry. Retention calls it
// when it stops recording, to let the memory go.
func (t *tally) forget() {
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		st.done, st.doneLeft, st.lossy = st.done[:0], 0, true
		st.mu.Unlock()
	}
}
