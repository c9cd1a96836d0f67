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
// int32), which keeps the window free of pointers, and a lock its member
// by an entry of the partition's holders, which keeps it at 80 bytes. A
// chunk never moves once allocated: the timer's wheel links the task
// embedded in each lock by address.
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
	"slices"
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
// cancelled when that reaches zero. It is 80 bytes, 48 of them the task.
type lock struct {
	task  timer.Task
	p     *Partition // immutable
	first int64
	// n counts the offsets it acquired, first to first+n-1; while the
	// lock is free, it links the free list (as locks.free does).
	n      int32
	idx    int32 // its index in the slab; immutable
	member int32 // the acquiring member's entry in the partition's holders
	// held fits 16 bits: it is at most the window's records, maxWindow.
	held int16
	runs int16 // runs of task to come (see the file's comment)
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

// get returns a free lock of p's for member (its entry in p.holders, which
// the lock references until it is freed): from the free list, or a new
// one (a new chunk when the last is full). REQUIRES: p.mu held.
func (s *locks) get(p *Partition, member int32) *lock {
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

// put frees l, which holds nothing and whose task will not run, and drops
// its reference to its member. REQUIRES: p.mu held.
func (s *locks) put(l *lock) {
	l.p.holders.unref(l.member)
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

// holders are the members holding locks in a partition: a lock names its
// member by its entry here (4 bytes, no pointer, where the member's id
// would take 16 and a pointer for the collector), and an acknowledgement
// compares entries, not strings. An entry is referenced by the locks that
// name it, and free for another member when none does. Few members hold
// locks in one partition at a time (a share group's members, at most),
// and a member acquiring or acknowledging again finds itself first.
type holders struct {
	names []string
	locks []int32 // the locks naming each entry; 0: free
	last  int32   // the entry found last
}

// find returns member's entry, or -1 when it holds no lock.
// O(members holding locks). REQUIRES: p.mu held.
func (h *holders) find(member string) int32 {
	if i := h.last; int(i) < len(h.names) && h.locks[i] > 0 && h.names[i] == member {
		return i
	}
	for i, name := range h.names {
		if h.locks[i] > 0 && name == member {
			h.last = int32(i)
			return int32(i)
		}
	}
	return -1
}

// ref returns member's entry, referenced once more: its own, a free one,
// or a new one. O(members holding locks). REQUIRES: p.mu held.
func (h *holders) ref(member string) int32 {
	i := h.find(member)
	if i < 0 {
		i = int32(slices.Index(h.locks, 0))
		if i < 0 {
			i = int32(len(h.names))
			h.names, h.locks = append(h.names, ""), append(h.locks, 0)
		}
		h.names[i], h.last = member, i
	}
	h.locks[i]++
	return i
}

// unref drops a reference to entry i, freeing it with the last.
// REQUIRES: p.mu held.
func (h *holders) unref(i int32) {
	if h.locks[i]--; h.locks[i] == 0 {
		h.names[i] = "" // not to keep the member's id alive
	}
}
