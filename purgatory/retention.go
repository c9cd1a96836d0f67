package purgatory

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// retention bounds the garbage of the watch lists: the entries of completed
// operations still listed, each of which keeps its operation (and what the
// operation holds: a fetch's response, a produce's records) reachable.
//
// It counts them exactly. Each completion reports how many entries its
// operation left in lists, added to a counter of the tally striped by the
// operation's address, so that completions on two cores seldom share one;
// the lists count what they drop, under the locks they hold anyway. The
// garbage is the difference. Reading the lists' count takes each shard's
// lock, so it is read seldom: between readings, the completions since the
// last one plus the garbage then are an upper bound, which only grows.
//
// The limit is the larger of the purge interval and a sixteenth of the
// live entries (as of the last reading): a purge walks every entry, live
// ones included, so a limit under a sixteenth of them would make purging
// cost more than a few entry visits per completion. With 165,000 waiting
// operations and an interval of 1000 (the performance tool's run), a bound
// of the interval alone had every 1000 completions walk them all, and
// tripled the tool's CPU time; with the sixteenth, and purges waiting for
// twice the limit (below), each purge drops at least one entry for every 9
// it visits.
//
// A purge costs a visit of every entry, so it is put off as long as the
// bound allows: it starts past twice the limit, and drops at least that
// much. (Purging past the limit, as before, visited 18.5 entries per entry
// dropped in the performance tool's run, and took a third of its CPU.) A
// visit is a lookup among the operations completions recorded since the
// last purge (tally, watchlist.AddrSet), not a read of the operation.
//
// A completion that takes its stripe past a multiple of step adds the
// steps it crossed to a shared count, coarse, and checks the bound against
// it: the stripes are read by no completion, and each core writes the
// shared count once per step of its completions. Coarse trails the exact
// total by less than stripes×step, at most half the interval (4 for an
// interval under 16), so at most that much garbage goes unseen. Past twice
// the limit, the check reads the lists; if the garbage really is past
// twice the limit it wakes the reaper to purge, and past two and a half
// times the limit (the reaper is behind), or without a reaper, the
// completing goroutine purges itself. The reaper also reads the lists at
// each round the bound is past twice the limit. So the garbage stays under
// three times the limit (two and a half, plus what goes unseen between two
// checks), plus the operations completing at that moment; and the lists
// are read on a completion's path at most once per half interval of
// completions.
type retention struct {
	interval int64       // immutable, as everything up to coarse
	shift    uint        // log2 of step, the step being a power of two
	p        purgeTarget // the purgatory
	t        *tally      // its completions' tally: the stripes
	_        [64]byte    // the fields above, read by every completion, on no stripe's line

	coarse atomic.Int64 // steps the stripes crossed, times step: under total by < stripes×step
	_      [56]byte     // coarse alone on its line, as the stripes are

	// collecting says whether completions record their addresses for the
	// next purge: only while purges come (a reading past twice the limit
	// turns it on), not while checks drop the garbage before any purge is
	// due (most of what was recorded is gone from the lists: it turns
	// off), where recording would cost every completion for nothing.
	collecting atomic.Bool

	dropped atomic.Int64 // the lists' Dropped at the last reading; written under mu
	limit   atomic.Int64 // the interval, or a sixteenth of the live entries at the last reading; written under mu

	mu         sync.Mutex    // guards the following; one reading at a time
	lastTotal  int64         // the stripes' total at the reaper's last round
	lastChange time.Duration // when a round last saw it change, on the timer's clock
	fullNext   bool          // the last purge left garbage it could not find: walk every entry next time
}

// liveShare is the share of the live entries that the limit never goes
// under: a purge, which waits for twice the limit, visits fewer than
// liveShare/2+1 entries per entry it drops.
const liveShare = 16

func newRetention(interval int64, p purgeTarget, t *tally) *retention {
	step := max(1, interval/(2*tallyStripes))
	shift := uint(bits.Len64(uint64(step)) - 1) // rounded down to a power of two
	r := &retention{interval: interval, shift: shift, p: p, t: t}
	r.limit.Store(interval)
	r.collecting.Store(true) // from the start, so that the first purge finds all
	return r
}

// total returns the entries completions have left behind, ever.
func (r *retention) total() int64 { return r.t.left() }

// crossed returns how many multiples of step a stripe's count of entries
// left behind passed going from before to after: if any, the caller checks
// the bound.
func (r *retention) crossed(before, after int64) int64 {
	return after>>r.shift - before>>r.shift
}

// maxDone bounds the addresses a stripe records for the next purge: more
// than a purge past the bound can need. Past it (checks dropped the
// entries, so no purge came) the stripe stops recording, and the next
// purge reads every entry.
func (r *retention) maxDone() int {
	return int(3*r.limit.Load()/tallyStripes) + 64
}

// check counts the steps a stripe crossed and acts on the upper bound of
// the garbage. Past twice the limit it reads the lists (each shard's
// lock), which resets the bound to the garbage. Past twice the limit, the
// reaper is woken to purge; the completing goroutine purges itself only
// past two and a half times the limit (the reaper is behind), or without a
// reaper.
func (r *retention) check(steps int64) {
	if r.coarse.Add(steps<<r.shift)-r.dropped.Load() <= 2*r.limit.Load() {
		return
	}
	g := r.garbage()
	r.collect(g)
	switch limit := r.limit.Load(); {
	case g > 2*limit+limit/2 || (g > 2*limit && !r.p.hasReaper()):
		r.p.purgeIfIdle(false)
	case g > 2*limit:
		r.p.wakeReaper()
	}
}

// collect turns the recording of completions for the next purge on or off
// from a reading of the garbage g, made because the upper bound passed
// twice the limit: past twice the limit a purge is coming, and the
// completions from now on are recorded (this purge reads every entry: a
// completion not recorded marked the record incomplete). At or under the
// limit, with four times more entries recorded than left (checks, or
// lists compacting themselves, dropped them), no purge is due for what
// was recorded, and recording stops.
func (r *retention) collect(g int64) {
	switch limit := r.limit.Load(); {
	case g > 2*limit && !r.collecting.Load():
		r.collecting.Store(true)
	case g <= limit && r.collecting.Load() && r.t.recorded() > 4*(g+limit):
		r.collecting.Store(false)
		r.t.forget()
	}
}

// garbage reads the lists' counts (each shard's lock in turn), sets the
// limit from them, and returns the entries of completed operations still
// listed.
func (r *retention) garbage() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	entries, dropped := r.p.counts()
	r.dropped.Store(dropped)
	g := r.total() - dropped
	r.limit.Store(max(r.interval, (int64(entries)-g)/liveShare))
	return g
}

// purgeTarget is what retention needs of its purgatory.
type purgeTarget interface {
	counts() (entries int, dropped int64)
	hasReaper() bool
	wakeReaper()
	purgeIfIdle(full bool)
}

func (p *Purgatory[K]) counts() (int, int64) { return p.w.Counts() }
func (p *Purgatory[K]) hasReaper() bool      { return p.reaper != nil }
func (p *Purgatory[K]) wakeReaper()          { p.reaper.Wake() }

// purgeIfIdle purges unless a purge is running already (which is dropping
// the garbage this caller saw). With full it reads every listed operation
// (see purgeLocked).
func (p *Purgatory[K]) purgeIfIdle(full bool) {
	if p.purgeMu.TryLock() {
		p.purgeLocked(full)
		p.purgeMu.Unlock()
	}
}

// Garbage returns the number of watch entries of completed operations still
// listed: each keeps its operation reachable until a check of its key or a
// purge drops it. It stays under three times the larger of the purge
// interval and a sixteenth of the live entries (see the package
// documentation); with a purge interval of 0 it is 0 but for operations
// finishing at that moment. O(shards of the watch lists),
// each under its lock.
func (p *Purgatory[K]) Garbage() int {
	if p.obs.retention == nil {
		return 0
	}
	return int(p.obs.retention.garbage())
}

// purger is the purgatory seen as its reaper's Purger: a conversion, and
// MaybePurge stays off the purgatory's method set.
type purger[K comparable] Purgatory[K]

// MaybePurge runs after each of the reaper's rounds (and when a completion
// woke it): it reads the lists when the garbage may be past twice the
// limit, and purges if it is; and once no operation has left garbage for
// a whole reaper wait (the load has ended), it purges whatever is left, so
// that the heap returns to its idle size.
func (pu *purger[K]) MaybePurge() {
	p := (*Purgatory[K])(pu)
	r := p.obs.retention
	total, now := r.total(), p.tm.Now()
	r.mu.Lock()
	if total != r.lastTotal {
		r.lastTotal, r.lastChange = total, now
	}
	// Quiet for a whole reaper wait: rounds come back to back while
	// deadlines fall due every tick, so two rounds without a completion
	// say nothing of the load.
	quiet := now-r.lastChange >= p.quietAfter
	r.mu.Unlock()
	upper := total - r.dropped.Load()
	switch {
	case upper <= 0: // nothing left behind since the lists were last read
	case upper > 2*r.limit.Load():
		g := r.garbage()
		r.collect(g)
		if g > 2*r.limit.Load() {
			p.purgeIfIdle(false)
		}
	case quiet && r.garbage() > 0:
		// The load has ended: drop whatever is left, stragglers included.
		p.purgeIfIdle(true)
	}
}
