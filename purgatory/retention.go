package purgatory

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// retention bounds the garbage of the watch lists: the entries of completed
// operations still listed, each of which keeps its operation (and what the
// operation holds: a fetch's response, a produce's records) reachable.
//
// It counts them exactly. Each completion reports how many entries its
// operation left in lists, added here to a counter striped by the
// operation's address, so that completions on two cores seldom share one;
// the lists count what they drop, under the locks they hold anyway. The
// garbage is the difference. Reading the lists' count takes each shard's
// lock, so it is read only when the completions since the last reading
// could have taken the garbage past the interval.
//
// A completion that takes its stripe past a multiple of step checks: with
// stripes×step at most half the interval, at most half an interval of
// garbage appears between two checks. Past the interval, the check wakes
// the reaper to purge; past twice the interval (the reaper is behind, or
// there is none), the completing goroutine purges itself. So the garbage
// stays under three times the purge interval, plus the operations
// completing at that moment, however many operations are live.
type retention struct {
	interval int64       // immutable, as everything up to stripes
	mask     int64       // step-1, the step being a power of two
	p        purgeTarget // the purgatory

	stripes [retentionStripes]struct {
		n atomic.Int64 // entries left behind by completions, ever
		_ [56]byte
	}

	mu        sync.Mutex // guards the following; one check at a time
	dropped   int64      // the lists' Dropped at the last reading
	lastTotal int64      // the stripes' total at the reaper's last round
}

const retentionStripes = 8 // a power of two

func newRetention(interval int64, p purgeTarget) *retention {
	step := max(1, interval/(2*retentionStripes))
	step = 1 << (bits.Len64(uint64(step)) - 1) // rounded down to a power of two
	return &retention{interval: interval, mask: step - 1, p: p}
}

// total returns the entries completions have left behind, ever.
func (r *retention) total() int64 {
	var t int64
	for i := range r.stripes {
		t += r.stripes[i].n.Load()
	}
	return t
}

// add counts the n entries s left behind, and reports whether its stripe
// crossed a step: the caller then checks the bound. One uncontended atomic
// add, inlined into the observer.
func (r *retention) add(s *lifecycle.State, n int) bool {
	// The stripe is picked from s's page, as the timer picks its shards:
	// operations allocated on different cores seldom share one.
	st := &r.stripes[uintptr(unsafe.Pointer(s))>>13&(retentionStripes-1)]
	return st.n.Add(int64(n))&r.mask < int64(n) // crossed a multiple of the step
}

// check acts on the garbage past the purge interval: it wakes the reaper,
// or past twice the interval (the reaper is behind, or there is none) it
// purges on this goroutine.
func (r *retention) check() {
	switch g := r.garbage(false); {
	case g > 2*r.interval || (g > r.interval && !r.p.hasReaper()):
		r.p.purgeIfIdle()
	case g > r.interval:
		r.p.wakeReaper()
	}
}

// garbage returns the entries of completed operations still listed: an
// upper bound when it is within the interval (reading the lists' count
// would not change what the caller does), exact otherwise or with exact.
func (r *retention) garbage(exact bool) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.total()
	if g := total - r.dropped; g <= r.interval && !exact {
		return g
	}
	r.dropped = r.p.dropped()
	return total - r.dropped
}

// purgeTarget is what retention needs of its purgatory.
type purgeTarget interface {
	dropped() int64
	hasReaper() bool
	wakeReaper()
	purgeIfIdle()
}

func (p *Purgatory[K]) dropped() int64  { return p.w.Dropped() }
func (p *Purgatory[K]) hasReaper() bool { return p.reaper != nil }
func (p *Purgatory[K]) wakeReaper()     { p.reaper.Wake() }

// purgeIfIdle purges unless a purge is running already (which is dropping
// the garbage this caller saw).
func (p *Purgatory[K]) purgeIfIdle() {
	if p.purgeMu.TryLock() {
		p.purgeLocked()
		p.purgeMu.Unlock()
	}
}

// Garbage returns the number of watch entries of completed operations still
// listed: each keeps its operation reachable until a check of its key or a
// purge drops it. The reaper keeps it under three times the purge interval
// (see the package documentation); with a purge interval of 0 it is 0 but
// for operations finishing at that moment. O(shards of the watch lists),
// each under its lock.
func (p *Purgatory[K]) Garbage() int {
	if p.obs.retention == nil {
		return 0
	}
	return int(p.obs.retention.garbage(true))
}

// purger is the purgatory seen as its reaper's Purger: a conversion, and
// MaybePurge stays off the purgatory's method set.
type purger[K comparable] Purgatory[K]

// MaybePurge runs after each of the reaper's rounds (and when a completion
// woke it): it purges when the garbage is past the purge interval, or, once
// no operation left garbage for a whole round (the load has ended), when
// there is any, so that the heap returns to its idle size.
func (pu *purger[K]) MaybePurge() {
	p := (*Purgatory[K])(pu)
	r := p.obs.retention
	total := r.total()
	r.mu.Lock()
	quiet := total == r.lastTotal
	r.lastTotal = total
	r.mu.Unlock()
	switch g := r.garbage(false); {
	case g <= 0: // nothing left behind since the lists were last counted
	case g > r.interval:
		p.purgeIfIdle()
	case quiet && r.garbage(true) > 0:
		p.purgeIfIdle()
	}
}
