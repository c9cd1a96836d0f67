package share

// Acquisition locks, kept in a slab per partition.
//
// # Why a slab
//
// A broker holds a lock per acquisition, and most are cancelled within a
// moment of being taken: one allocation per lock, and a pointer from each
// record to it, would make the garbage collector's work grow with the
// locks held (it scans every pointer of the window and every lock on each
// cycle). So a partition's locks live in chunks of lockChunk, allocated
// when the partition first needs that many and reused from a free list
// ever after; a record names its lock by its index in the slab (an
// int32), which keeps the window free of pointers. A chunk never moves
// once allocated: the timer's wheel links the task embedded in each lock
// by address.
//
// # When a lock may be reused
//
// A lock's task may have expired and be about to run on a timer worker
// (waiting for the partition's mu) when its last record is acknowledged:
// Cancel then reports false, and the run is still to come. A lock is
// reused only once nothing holds it and no run of its task is to come,
// or a run for an old acquisition would release a new one. runs counts
// the runs to come: one per Schedule, less one per Cancel that stopped the
// task and per run; a renewal (Reschedule) of a task no longer pending
// adds one, the run already under way and the new one both to come.
//
// Every field of a lock but p is guarded by its partition's mu: the task
// is scheduled, renewed and cancelled with p.mu held, and its run takes
// p.mu first, so the count is exact.

import (
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// lockChunkBits sizes the chunks of the lock slab: 128 locks (12 KiB).
const (
	lockChunkBits = 7
	lockChunk     = 1 << lockChunkBits
)

// lock is one acquisition's lock: a timer task that releases what the
// acquisition still holds when it expires. first and n bound the offsets
// it acquired; held counts those still acquired under it, and the lock is
// cancelled when that reaches zero.
type lock struct {
	task   timer.Task
	p      *Partition // immutable
	member string
	first  int64
	// n counts the offsets it acquired, first to first+n-1; while the
	// lock is free, it links the free list (as locks.free does).
	n    int32
	held int32
	runs int32 // runs of task to come (see the file's comment)
	idx  int32 // its index in the slab; immutable
}

// Run expires the lock, on a timer worker.
func (l *lock) Run() { l.p.expire(l) }

// last is the last offset l acquired.
func (l *lock) last() int64 { return l.first + int64(l.n) - 1 }

// locks is a partition's slab of acquisition locks.
type locks struct {
	chunks []*[lockChunk]lock
	// free is one more than the index of the free list's head, 0 when
	// the list is empty, so that the zero slab is ready for use.
	free int32
	used int32 // locks ever handed out; those from used on are untouched
}

// at returns the lock with index i. O(1).
func (s *locks) at(i int32) *lock {
	return &s.chunks[i>>lockChunkBits][i&(lockChunk-1)]
}

// get returns a free lock of p's for member: from the free list, or a new
// one (a new chunk when the last is full). REQUIRES: p.mu held.
func (s *locks) get(p *Partition, member string) *lock {
	var l *lock
	if s.free > 0 {
		l = s.at(s.free - 1)
		s.free = l.n
	} else {
		i := s.used
		if int(i>>lockChunkBits) == len(s.chunks) {
			s.chunks = append(s.chunks, new([lockChunk]lock))
		}
		s.used++
		l = s.at(i)
		l.p, l.idx = p, i
		l.task.Init(l)
	}
	l.member, l.first, l.n, l.held, l.runs = member, -1, 0, 0, 0
	return l
}

// put frees l, which holds nothing and whose task will not run.
// REQUIRES: p.mu held.
func (s *locks) put(l *lock) {
	l.member = "" // not to keep the member's name alive
	l.n = s.free
	s.free = l.idx + 1
}

// cancelLocked stops l's task once it holds nothing, and frees l if no run
// of it is to come. REQUIRES: p.mu held, l.held == 0.
func (p *Partition) cancelLocked(l *lock) {
	if l.runs > 0 && p.m.cfg.Timer.Cancel(&l.task) { // O(1)
		l.runs--
	}
	if l.runs == 0 {
		p.locks.put(l)
	}
}

// renewLocked restarts l's task, due after lockFor, for the records it
// holds (an AckRenew). A task that expired already, its run waiting for
// p.mu, is scheduled again: that run releases what l holds, and the new
// one finds nothing. REQUIRES: p.mu held, l.held > 0.
func (p *Partition) renewLocked(l *lock, lockFor time.Duration) {
	pending, err := p.m.cfg.Timer.Reschedule(&l.task, lockFor)
	if err == nil && !pending {
		l.runs++
	}
}
