package share

// Lock groups: the records a member acquires in a partition whose locks
// fall due in one tick share one timer task.
//
// # Why groups
//
// A timer task per acquisition cost a Schedule and a Cancel per lock,
// each a shard's mutex and the wheel's links, and a lock object to embed
// the task in: most of what a lock cost. A broker acquires far more often
// than its timer ticks (a millisecond by default), and the locks a member
// takes in one tick all fall due in one later tick: the first of them
// schedules a task for that tick, the others join its group, and only the
// group's last record to be settled cancels it.
//
// # Never early
//
// The timer rounds a deadline up to a tick: a task due at d runs once its
// wheel reaches tick ⌈d/tick⌉, that is at the clock's ⌈d/tick⌉·tick or
// later, never before (timer/doc.go; Timer.schedule's tickDiv.ceil, and
// advance's tick to nanoseconds). Records acquired (or renewed) with a
// deadline d join their member's group of tick G = ⌈d/Config.Tick⌉, whose
// task is scheduled at G·Config.Tick: that is at or after the deadline of
// every lock of the group, so none is released early, whatever
// Config.Tick is. With Config.Tick the timer's own tick (its default,
// Timer.Tick), the group's task runs on the tick each lock's own task
// would have run on: ⌈G·tick/tick⌉ = G, so no lock is released later than
// it would be alone either.
// Records may join a group whose task has already left the wheel (its run
// waiting for the partition's mu): that run starts no earlier than
// G·Config.Tick either. The deadline is read from the timer's clock once
// per acquisition, after its records are taken (as Schedule read it); a
// new group's ScheduleAt reads it again, once a tick at most.
//
// # Expiry
//
// A record names its group by index; a group counts the records held
// under it and bounds their offsets (lo, hi), so that its run releases the
// records of the window between those that name it, and nothing else. A
// group is made for the records of one tick, mostly consecutive: the run
// passes over few others.
//
// # When a group may be reused
//
// As locks were when each had its task: a group is reused only once it
// covers no record and no run of its task is to come, or a run for an old
// group would release records acquired since under its index. runs counts
// the runs to come: one when the task is scheduled, less one when a
// Cancel stops it or the run starts. A group's task is scheduled once,
// never renewed, so runs is 0 or 1. A group whose last record is settled
// while its run is to come is closed to new records (it is no longer its
// member's open group) and freed by that run. Every field of a group but
// p and idx is guarded by its partition's mu; the task is scheduled and
// cancelled with p.mu held, and its run takes p.mu first, so the count is
// exact.

import (
	"math"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// noGroup is the group of a record just taken, before its group is
// chosen (AcquireAppend), or whose timer is closed.
const noGroup = -1

// group is the records of one member due in one tick, and the timer task
// that releases them. It is 96 bytes, 48 of them the task.
type group struct {
	task timer.Task
	p    *Partition    // immutable
	at   time.Duration // its task's deadline: the end of its tick
	// lo and hi bound the offsets of the records that joined it.
	lo, hi int64
	idx    int32 // its index in the slab; immutable
	// member is its member's entry in the partition's holders, which it
	// references while it covers records; -1 once it covers none.
	member int32
	// count is the records held under it; while the group is free, it
	// links the free list (as groups.free does).
	count int32
	runs  int16 // runs of task to come (see the file's comment)
}

// Run expires the group's records, on a timer worker.
func (g *group) Run() { g.p.expire(g) }

// groupChunkBits sizes the chunks of the group slab: 64 groups (6 KiB).
const (
	groupChunkBits = 6
	groupChunk     = 1 << groupChunkBits
)

// groups is a partition's slab of lock groups, in fixed chunks allocated
// as needed and never moved (the timer's wheel links a group's task by
// address), reused from a free list without allocating.
type groups struct {
	chunks []*[groupChunk]group
	free   int32 // one more than the free list's head; 0: empty
	used   int32 // groups ever handed out; those from used on are untouched
}

// at returns the group with index i. O(1).
func (s *groups) at(i int32) *group {
	return &s.chunks[i>>groupChunkBits][i&(groupChunk-1)]
}

// get returns a free group of p's for member, due at. REQUIRES: p.mu held.
func (s *groups) get(p *Partition, member int32, at time.Duration) *group {
	var g *group
	if s.free > 0 {
		g = s.at(s.free - 1)
		s.free = g.count
	} else {
		i := s.used
		if int(i>>groupChunkBits) == len(s.chunks) {
			s.chunks = append(s.chunks, new([groupChunk]group))
		}
		s.used++
		g = s.at(i)
		g.p, g.idx = p, i
		g.task.Init(g)
	}
	g.at, g.member, g.count, g.runs = at, member, 0, 0
	g.lo, g.hi = math.MaxInt64, math.MinInt64
	return g
}

// put frees g, which covers no record and whose task will not run.
// REQUIRES: p.mu held.
func (s *groups) put(g *group) {
	g.count = s.free
	s.free = g.idx + 1
}

// tickEnd returns the end of the tick that a deadline d (on the timer's
// clock) falls due in, ⌈d/tick⌉·tick as the timer rounds it, saturating.
func tickEnd(d, tick time.Duration) time.Duration {
	q := d / tick
	if q*tick < d {
		q++ // d > 0 and not on a tick; for d <= 0 truncation is the ceiling
	}
	if q > math.MaxInt64/tick {
		return math.MaxInt64
	}
	return q * tick
}

// deadlineLocked returns the deadline of a lock taken now for lockFor, on
// the timer's clock, saturating. It reads the clock. REQUIRES: p.mu held.
func (p *Partition) deadlineLocked(lockFor time.Duration) time.Duration {
	due := p.m.cfg.Timer.Now() + lockFor
	if lockFor > 0 && due < lockFor {
		due = math.MaxInt64
	}
	return due
}

// groupLocked returns member's group for records due at due: its open
// group when due falls in that group's tick, a new one otherwise, whose
// task is scheduled for the end of the tick and which becomes the
// member's open group. It fails only when the timer is closed.
// REQUIRES: p.mu held, member referenced.
func (p *Partition) groupLocked(member int32, due time.Duration) (*group, error) {
	h, s := &p.holders, &p.groups
	// The open group's tick is (at-tick, at]: no division to find that
	// due falls in it.
	if o := h.open[member]; o > 0 {
		if g := s.at(o - 1); due <= g.at && due > g.at-p.m.cfg.Tick {
			return g, nil
		}
	}
	at := tickEnd(due, p.m.cfg.Tick)
	g := s.get(p, member, at)
	if err := p.m.cfg.Timer.ScheduleAt(&g.task, at); err != nil {
		s.put(g)
		return nil, err
	}
	g.runs = 1
	h.refs[member]++ // the group's reference, dropped when it covers nothing
	h.open[member] = g.idx + 1
	return g, nil
}

// joinLocked puts r, at off, acquired and in no group, under g.
// REQUIRES: p.mu held.
func (g *group) joinLocked(off int64, r *record) {
	r.group = g.idx
	g.count++
	g.lo, g.hi = min(g.lo, off), max(g.hi, off)
}

// leaveLocked takes r, acquired, out of its group, whose task is
// cancelled when it covers no more records, and which is freed if no run
// of its task is to come. O(1). REQUIRES: p.mu held.
func (p *Partition) leaveLocked(r *record) {
	g := p.groups.at(r.group)
	r.group = noGroup
	if g.count--; g.count > 0 {
		return
	}
	// Closed to new records: a run to come may not wait for them.
	if h := &p.holders; h.open[g.member] == g.idx+1 {
		h.open[g.member] = 0
	}
	p.holders.unref(g.member)
	g.member = -1
	if g.runs > 0 && p.m.cfg.Timer.Cancel(&g.task) { // O(1)
		g.runs--
	}
	if g.runs == 0 {
		p.groups.put(g)
	}
}

// renewLocked moves r, at off, held by member, to member's group for a
// deadline due (an AckRenew). A run of its old group still to come no
// longer finds it. REQUIRES: p.mu held, r acquired.
func (p *Partition) renewLocked(off int64, r *record, member int32, due time.Duration) {
	g, err := p.groupLocked(member, due)
	if err != nil || g.idx == r.group {
		// The timer is closed (the broker shutting down): no lock
		// expires any more, and r stays where it is.
		return
	}
	p.leaveLocked(r)
	g.joinLocked(off, r)
}

// expire releases the records still held under g, on a timer worker, and
// writes the new state (released records are available, or archived at
// the delivery limit) to the persister.
func (p *Partition) expire(g *group) {
	p.mu.Lock()
	g.runs-- // this run; none is to come now (runs is 0 or 1)
	wake, settled := false, 0
	if g.count == 0 {
		// Its records were settled while its run waited for p.mu.
		p.groups.put(g)
	} else {
		// Each record leaves g as it is settled; the last frees g.
		from, to := max(g.lo, p.start), min(g.hi, p.end-1)
		for off := from; off <= to && g.member >= 0; off++ {
			if r := &p.recs[off-p.start]; r.state == Acquired && r.group == g.idx {
				st := p.releasedState(r.deliveries)
				p.settleLocked(off, r, st)
				wake = wake || st == Available
				settled++
			}
		}
		wake = p.advanceLocked() || wake
	}
	p.mu.Unlock()
	if settled > 0 {
		p.Persist(nil)
	}
	if wake {
		p.m.wake(p.key)
	}
}
