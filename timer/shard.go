package timer

import (
	"math/bits"
	"runtime"
	"sync"
	"unsafe"
)

// shard is one wheel with its own lock. A timer has a power-of-two number of
// them and a task always goes to the one its address picks, so that tasks
// scheduled and cancelled on different cores seldom meet on a lock: the
// wheel's one mutex was what kept two cores from scaling.
type shard struct {
	mu         sync.Mutex // guards the following, and every Task and bucket in w
	w          wheel
	firing     Task     // sentinel of the due tasks taken from level-0 buckets, not yet handed over
	sleepUntil int64    // ns: when the latest AdvanceClock wait ends; earlier deadlines wake it
	pending    int64    // tasks linked in w
	_          [64]byte // the next shard's lock on another cache line
}

// maxShards bounds the default shard count: past it, more shards cost the
// advancer more than they spare the schedulers.
const maxShards = 64

// defaultShards is four shards a core, so that two cores pick the same one a
// quarter of the time at most, rounded up to a power of two.
func defaultShards() int {
	return min(maxShards, 1<<bits.Len(uint(4*runtime.GOMAXPROCS(0)-1)))
}

// shardOf returns the shard t belongs to. The hash is of t's address, which
// Go never moves for a heap object (a scheduled task is on the heap: the
// wheel keeps a pointer to it), as maps keyed by pointers rely on too. The
// page number is hashed, not the address itself, so that tasks allocated one
// after the other on one core, from the same span, share a shard and its
// cache lines, while another core's allocations come from another span.
func (tm *Timer) shardOf(t *Task) *shard {
	page := uint64(uintptr(unsafe.Pointer(t))) >> 13
	// With one shard the shift is 64, and Go shifts every bit out: 0.
	return &tm.shards[(page*0x9E3779B97F4A7C15)>>tm.shardShift]
}

// idleLocked reports whether sh has no due task waiting to be handed over
// and nothing to cascade.
//
// REQUIRES: sh.mu held.
func (sh *shard) idleLocked() bool {
	if sh.firing.next != &sh.firing {
		return false
	}
	for _, lv := range sh.w.levels {
		if lv.cascade.next != &lv.cascade {
			return false
		}
	}
	return true
}

// goneLocked counts a task unlinked from sh's wheel for good (cancelled or
// due), in sh and under the cap.
//
// REQUIRES: sh.mu held.
func (tm *Timer) goneLocked(sh *shard) {
	sh.pending--
	if tm.maxPending > 0 {
		tm.total.Add(-1)
	}
}
