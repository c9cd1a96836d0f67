package share

// Acquisition locks, and the members that hold them.
//
// # What a lock is
//
// An acquisition's lock is the group (group.go) its records joined: the
// group of its member and of the tick its deadline falls due in, whose
// timer task releases them. A record names its group by index, in its
// 8 bytes; there is no object per acquisition. A broker holds a lock per
// acquisition, most cancelled within a moment of being taken: an object
// per lock, even in a slab, cost a first touch of its memory when taken
// and another when settled (BenchmarkAcquisitionLocks), and a pointer
// to it from each record would make the garbage collector's work grow
// with the locks held. The window stays a slice of records without a
// pointer, and the groups, a few per member and tick, stay in the cache.
//
// Acknowledging a record takes it out of its group in O(1), and the last
// one to go cancels the group's task; the task's expiry releases the
// records still held under the group, and nothing else. A renewal moves
// the records it names to their member's group of the new deadline.

import "slices"

// holders are the members holding records in a partition: a group names
// its member by its entry here (4 bytes, no pointer, where the member's
// id would take 16 and a pointer for the collector), and an
// acknowledgement compares entries, not strings. An entry is referenced
// by the groups that name it, and free for another member when none
// does. Few members hold records in one partition at a time (a share
// group's members, at most), and a member acquiring or acknowledging
// again finds itself first.
type holders struct {
	names []string
	refs  []int32 // the groups naming each entry; 0: free
	// open is, for each entry, one more than the index of the group the
	// member's next records join when they fall due in its tick (the
	// group made last for it); 0 for none.
	open []int32
	last int32 // the entry found last
}

// find returns member's entry, or -1 when it holds no record.
// O(members holding records). REQUIRES: p.mu held.
func (h *holders) find(member string) int32 {
	if i := h.last; int(i) < len(h.names) && h.refs[i] > 0 && h.names[i] == member {
		return i
	}
	for i, name := range h.names {
		if h.refs[i] > 0 && name == member {
			h.last = int32(i)
			return int32(i)
		}
	}
	return -1
}

// ref returns member's entry, referenced once more: its own, a free one,
// or a new one. O(members holding records). REQUIRES: p.mu held.
func (h *holders) ref(member string) int32 {
	i := h.find(member)
	if i < 0 {
		i = int32(slices.Index(h.refs, 0))
		if i < 0 {
			i = int32(len(h.names))
			h.names, h.refs, h.open = append(h.names, ""), append(h.refs, 0), append(h.open, 0)
		}
		h.names[i], h.last = member, i
	}
	h.refs[i]++
	return i
}

// unref drops a reference to entry i, freeing it with the last.
// REQUIRES: p.mu held.
func (h *holders) unref(i int32) {
	if h.refs[i]--; h.refs[i] == 0 {
		h.names[i] = "" // not to keep the member's id alive
		h.open[i] = 0
	}
}
