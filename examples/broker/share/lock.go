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
// int32), which keeps the window free of pointers, a lock its member by
// an entry of the partition's holders, and its group (group.go: the timer
// task it shares with the locks due in its tick) and its neighbours in
// that group by index, which keeps it at 32 bytes without a pointer.
//
// # When a lock may be reused
//
// As soon as it holds nothing: it then leaves its group's list, and a run
// of the group's task still to come (group.go) releases only the locks
// linked to the group when it runs. The timer never holds a lock's
// address; the reuse rule that a run for an old acquisition must never
// release a new one is kept by the groups, which are reused only once no
// run of their task is to come.
//
// Every field of a lock is guarded by its partition's mu.

import (
	"slices"
	"time"
)

// lockChunkBits sizes the chunks of the lock slab: 128 locks (12 KiB).
const (
	lockChunkBits = 7
	lockChunk     = 1 << lockChunkBits
)

// lock is one acquisition's lock: it releases what the acquisition still
// holds when its group's task expires. first and n bound the offsets it
// acquired; held counts those still acquired under it, and the lock
// leaves its group when that reaches zero. It is 32 bytes, no pointer.
type lock struct {
	first  int64
	idx    int32 // its index in the slab; immutable
	member int32 // the acquiring member's entry in the partition's holders
	// group is its group's index in the partition's groups, -1 for none;
	// prev and next are its neighbours in that group's list, -1 at its
	// ends. While the lock is free, next links the free list (as
	// locks.free does).
	group, prev, next int32
	// n counts the offsets it acquired, first to first+n-1, and held
	// those still acquired under it. Both fit 16 bits: the offsets of one
	// acquisition lie in the window, which holds MaxLocks (10,000 at
	// most).
	n, held int16
}

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

// get returns a free lock for member (its entry in p.holders, which
// the lock references until it is freed): from the free list, or a new
// one (a new chunk when the last is full). REQUIRES: p.mu held.
func (s *locks) get(member int32) *lock {
	var l *lock
	if s.free > 0 {
		l = s.at(s.free - 1)
		s.free = l.next
	} else {
		i := s.used
		if int(i>>lockChunkBits) == len(s.chunks) {
			s.chunks = append(s.chunks, new([lockChunk]lock))
		}
		s.used++
		l = s.at(i)
		l.idx = i
	}
	l.member, l.first, l.n, l.held = member, -1, 0, 0
	l.group, l.prev, l.next = -1, -1, -1
	return l
}

// put frees l, which holds nothing and is in no group. The caller drops
// its reference to its member. REQUIRES: p.mu held.
func (s *locks) put(l *lock) {
	l.next = s.free
	s.free = l.idx + 1
}

// dropLocked lets l go once it holds nothing: it leaves its group (whose
// task is cancelled with its last lock) and is freed. O(1).
// REQUIRES: p.mu held, l.held == 0.
func (p *Partition) dropLocked(l *lock) {
	if l.group >= 0 {
		p.leaveLocked(l) // group.go
	}
	p.holders.unref(l.member)
	p.locks.put(l)
}

// renewLocked moves l, for the records it holds, to the group of a
// deadline lockFor from now (an AckRenew). A run of its old group still
// to come no longer finds it. REQUIRES: p.mu held, l.held > 0.
func (p *Partition) renewLocked(l *lock, lockFor time.Duration) {
	if l.group >= 0 {
		p.leaveLocked(l)
	}
	// It fails only once the timer is closed (the broker shutting down),
	// when no lock expires any more: l then stays in no group, its
	// records released with their member or the partition.
	_ = p.joinLocked(l, lockFor)
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
