package watchlist

import (
	"math/bits"
	"runtime/metrics"
	"sync/atomic"
	"unsafe"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// AddrSet is a set of operation addresses: the operations that completed
// leaving watch entries behind, recorded as they completed, for a purge to
// find their entries without reading every listed operation.
//
// A purge must tell, for every entry, whether its operation completed.
// Reading the operation's completion word is a cache miss per entry (27ns
// each in the performance tool's purges, most of its CPU), where a lookup
// here touches a table of a few hundred kilobytes that stays in cache.
//
// # Why an address is enough
//
// The addresses are plain numbers: they keep nothing reachable, so the
// record costs no memory beyond itself. An address could then be another
// operation's by the time the purge looks for it: the completed one freed
// (checks dropped all its entries, its owner let it go) and a new one
// allocated in its place and listed. Go's collector frees an object only
// when it sweeps after a completed cycle that found it unreachable, and a
// recorded operation was reachable when it was recorded (it was being
// completed). So if no cycle has completed since the set's first address
// was recorded, every address in the set is still its operation's. The set
// is stamped with the count of completed cycles from before its first
// record (Reset's since); a purge reads the count under each shard's lock,
// and while it has not moved, an entry found in the set is dropped without
// reading its operation. Once it has moved, each entry found is confirmed
// by reading its operation's completion word. (A new operation listed in a
// shard got there before the purge took the shard's lock, after its
// allocation, after the sweep, after the cycle's end: the count read under
// the lock has moved.) Cycles are far apart next to purges (in the
// performance tool, one per 650ms against one purge per 85ms), so most
// purges read no operation at all.
//
// Operations missing from the set keep their entries until a later purge.
// It is an open-addressing table with linear probing, at most half full,
// rebuilt by each purge.
type AddrSet struct {
	slots []uintptr // 0: empty; addresses are never 0
	shift uint      // 64 - log2(len(slots))
	n     int
	since uint64 // GCCycles before the first address was recorded
}

// GCCycles returns the number of garbage collection cycles completed since
// the program started. About 130ns. On a runtime without that metric it
// returns a new number at every call, so that no two readings are equal
// and every purge confirms what it finds: never trusting an address it
// cannot vouch for.
func GCCycles() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return unknownCycles.Add(1) | 1<<63
	}
	return s[0].Value.Uint64()
}

// unknownCycles numbers GCCycles' readings where the runtime has no count.
var unknownCycles atomic.Uint64

// Reset empties the set and fills it with the addresses of groups, which
// were all recorded after the garbage collector had completed since
// cycles. It keeps its table when it is big enough.
func (s *AddrSet) Reset(since uint64, groups ...[]uintptr) {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	size := 1 << bits.Len(uint(2*n|15)) // at least 16, at most half full
	if len(s.slots) < size || len(s.slots) > 8*size {
		s.slots = make([]uintptr, size) // a burst's table is not kept for ever
	} else {
		clear(s.slots)
	}
	s.shift = uint(64 - bits.TrailingZeros(uint(len(s.slots))))
	s.n, s.since = 0, since
	for _, g := range groups {
		for _, a := range g {
			s.add(a)
		}
	}
}

// Len returns the number of addresses in the set.
func (s *AddrSet) Len() int { return s.n }

func (s *AddrSet) add(a uintptr) {
	mask := uintptr(len(s.slots) - 1)
	for i := s.slot(a); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = a
			s.n++
			return
		case a:
			return
		}
	}
}

// slot is where a's probe starts: Fibonacci hashing, the product's high bits.
func (s *AddrSet) slot(a uintptr) uintptr {
	return uintptr(uint64(a) * 0x9E3779B97F4A7C15 >> s.shift)
}

// has reports whether a is in the set.
func (s *AddrSet) has(a uintptr) bool {
	if s.n == 0 {
		return false
	}
	mask := uintptr(len(s.slots) - 1)
	for i := s.slot(a); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case a:
			return true
		case 0:
			return false
		}
	}
}

// Addr returns the address the set records for s.
func Addr(s *lifecycle.State) uintptr { return uintptr(unsafe.Pointer(s)) }

// compactKnown drops the entries of the completed operations whose
// addresses are in done, keeping order, and returns how many it dropped.
// With confirm it reads each operation found in done to confirm that it
// completed; without, it reads no operation.
//
// REQUIRES: the shard's lock held; confirm unless no garbage collection
// cycle completed since done's addresses were recorded (see AddrSet).
func (l *list[K]) compactKnown(done *AddrSet, confirm bool) int {
	j := 0
	for i, s := range l.ops {
		if done.has(Addr(s)) && (!confirm || !lifecycle.IsPending(s)) {
			continue
		}
		if i != j {
			l.ops[j] = s
		}
		j++
	}
	return l.truncate(j)
}
