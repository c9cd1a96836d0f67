package share

// Lock groups: the acquisition locks of a partition due in one tick share
// one timer task.
//
// # Why groups
//
// A timer task per lock cost a Schedule and a Cancel per acquisition,
// each a clock read or a shard's mutex and the wheel's links: most of
// what a lock cost once its memory was cheap. A broker acquires far more
// often than its timer ticks (a millisecond by default), and the locks it
// takes in one tick all expire in one later tick: the first of them
// schedules a task for that tick, the others join it, and only the group's
// last lock to go cancels it.
//
// # Never early
//
// The timer rounds a deadline up to a tick: a task due at d runs once its
// wheel reaches tick ⌈d/tick⌉, that is at the clock's ⌈d/tick⌉·tick or
// later, never before (timer/doc.go; Timer.schedule's tickDiv.ceil). A lock
// due at d joins the group of tick G = ⌈d/Config.Tick⌉, whose task is
// scheduled at G·Config.Tick: that is at or after the deadline of every
// lock of the group, so none is released early, whatever Config.Tick is.
// With Config.Tick the timer's own tick, the group's task runs on the tick
// each of its locks would have run on alone: ⌈G·tick/tick⌉ = G, so no lock
// is released later than it was either. A lock may join a group whose
// task has already left the wheel (its run waiting for the partition's
// mu): that run starts no earlier than G·Config.Tick either.
//
// # Expiry
//
// A group links its locks in a list through them (lock.next, lock.prev,
// indices in the slab), so that a lock leaves it in O(1) when its last
// record is settled or it is renewed, and the group's run releases exactly
// the locks linked to it then, each only the records it still holds. A
// renewal moves a lock to the group of its new deadline: a run still to
// come for its old group no longer finds it (the renewal wins the race,
// which releases nothing early).
//
// # When a group may be reused
//
// As locks were when each had its task: a group is reused only once it
// covers no lock and no run of its task is to come, or a run for an old
// group would release a new one's locks. runs counts the runs to come: one
// when the task is scheduled, less one when a Cancel stops it or the run
// starts. A group's task is scheduled once, never renewed, so runs is 0 or
// 1. Every field of a group but p and idx is guarded by its partition's
// mu; the task is scheduled and cancelled with p.mu held, and its run takes
// p.mu first, so the count is exact.

import (
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// group is the locks of a partition due in one tick, and the timer task
// that releases them. It is 80 bytes, 48 of them the task.
type group struct {
	task timer.Task
	p    *Partition    // immutable
	at   time.Duration // its task's deadline: the end of its tick, G·Config.Tick
	// head is the index of its first lock, -1 for none; while the group
	// is free, it links the free list (as groups.free does).
	head  int32
	idx   int32 // its index in the slab; immutable
	count int32 // the locks linked from head
	runs  int16 // runs of task to come (see the file's comment)
}

// Run expires the group's locks, on a timer worker.
func (g *group) Run() { g.p.expire(g) }

// groups is a partition's slab of lock groups, in chunks as the locks are
// (lock.go), for the same reasons: a task's address must not move, and a
// group is reused without allocating.
type groups struct {
	chunks []*[lockChunk]group
	free   int32 // one more than the free list's head; 0: empty
	used   int32 // groups ever handed out
	// open is one more than the index of the group made last, which the
	// next lock due in its tick joins; 0 when there is none.
	open int32
}

// at returns the group with index i. O(1).
func (s *groups) at(i int32) *group {
	return &s.chunks[i>>lockChunkBits][i&(lockChunk-1)]
}

// get returns a free group of p's, due at. REQUIRES: p.mu held.
func (s *groups) get(p *Partition, at time.Duration) *group {
	var g *group
	if s.free > 0 {
		g = s.at(s.free - 1)
		s.free = g.head
	} else {
		i := s.used
		if int(i>>lockChunkBits) == len(s.chunks) {
			s.chunks = append(s.chunks, new([lockChunk]group))
		}
		s.used++
		g = s.at(i)
		g.p, g.idx = p, i
		g.task.Init(g)
	}
	g.at, g.head, g.count, g.runs = at, -1, 0, 0
	return g
}

// put frees g, which covers no lock and whose task will not run.
// REQUIRES: p.mu held.
func (s *groups) put(g *group) {
	if s.open == g.idx+1 {
		s.open = 0
	}
	g.head = s.free
	s.free = g.idx + 1
}

// tickEnd returns the end of the tick that a deadline d (on the timer's
// clock) falls due in, ⌈d/tick⌉·tick as the timer rounds it, saturating.
func tickEnd(d, tick time.Duration) time.Duration {
	q := d / tick
	if q*tick < d {
		q++ // d > 0 and not on a tick; for d <= 0 truncation is the ceiling
	}
	if q > (1<<63-1)/tick {
		return 1<<63 - 1
	}
	return q * tick
}

// joinLocked puts l, holding records, in the group of the tick its
// deadline falls due in, lockFor from now: the group made last when it is
// that tick's, a new one otherwise, whose task is scheduled for the end
// of the tick. It reads the clock once; a new group's ScheduleAt reads it
// again. It fails only when the timer is closed. REQUIRES: p.mu held,
// l in no group.
func (p *Partition) joinLocked(l *lock, lockFor time.Duration) error {
	tm, tick := p.m.cfg.Timer, p.m.cfg.Tick
	due := tm.Now() + lockFor
	if lockFor > 0 && due < lockFor {
		due = 1<<63 - 1 // saturate, as the timer does
	}
	var g *group
	// The open group's tick is (g.at-tick, g.at]: no division to
	// find that due falls in it.
	if s := &p.groups; s.open > 0 && due <= s.at(s.open-1).at && due > s.at(s.open-1).at-tick {
		g = s.at(s.open - 1)
	} else {
		at := tickEnd(due, tick)
		g = s.get(p, at)
		if err := tm.ScheduleAt(&g.task, at); err != nil {
			s.put(g)
			return err
		}
		g.runs = 1
		s.open = g.idx + 1
	}
	l.group, l.prev, l.next = g.idx, -1, g.head
	if g.head >= 0 {
		p.locks.at(g.head).prev = l.idx
	}
	g.head = l.idx
	g.count++
	return nil
}

// unlinkLocked takes l out of its group's list and returns the group.
// REQUIRES: p.mu held, l in a group.
func (p *Partition) unlinkLocked(l *lock) *group {
	g := p.groups.at(l.group)
	if l.prev >= 0 {
		p.locks.at(l.prev).next = l.next
	} else {
		g.head = l.next
	}
	if l.next >= 0 {
		p.locks.at(l.next).prev = l.prev
	}
	l.group, l.prev, l.next = -1, -1, -1
	g.count--
	return g
}

// leaveLocked takes l out of its group, which is cancelled when it covers
// no more locks, and freed if no run of its task is to come. O(1).
// REQUIRES: p.mu held, l in a group.
func (p *Partition) leaveLocked(l *lock) {
	g := p.unlinkLocked(l)
	if g.count > 0 {
		return
	}
	if g.runs > 0 && p.m.cfg.Timer.Cancel(&g.task) { // O(1)
		g.runs--
	}
	if g.runs == 0 {
		p.groups.put(g)
	}
}

// expire releases what g's locks still hold, on a timer worker, and
// writes the new state (released records are available, or archived at
// the delivery limit) to the persister.
func (p *Partition) expire(g *group) {
	p.mu.Lock()
	g.runs-- // this run; none is to come now (runs is 0 or 1)
	wake, settled := false, 0
	for g.count > 0 {
		// Out of the group first: settling its last record frees l,
		// and a freed lock belongs to no group.
		l := p.locks.at(g.head)
		p.unlinkLocked(l)
		released, n := p.releaseRecordsLocked(l, l.member)
		wake, settled = wake || released, settled+n
	}
	// Nothing covered, no run to come: a group whose locks all went
	// while its run waited for p.mu is freed here.
	p.groups.put(g)
	wake = p.advanceLocked() || wake
	p.mu.Unlock()
	if settled > 0 {
		p.Persist(nil)
	}
	if wake {
		p.m.wake(p.key)
	}
}
