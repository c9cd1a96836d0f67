package watchers

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/gopurgatory/purgatory/operation"
)

// DefaultShards is the number of shards when New is given zero. Kafka uses
// 512; see BENCHMARKS.md for the measurement behind this default.
const DefaultShards = 256

// Watchers maps keys to the operations watched under them, in shards that
// each have their own lock, so that keys in different shards never contend.
type Watchers[K comparable] struct {
	seed   maphash.Seed // immutable
	mask   uint64       // shards-1; immutable
	shards []shard[K]
}

type shard[K comparable] struct {
	mu      sync.Mutex // guards the following
	lists   map[K]*list
	free    []*list // dropped lists kept for new keys, with their capacity
	entries int     // entries in lists, completed ones included until purged
	added   int     // operations watched since the last purge, counted once

	// The key looked up last and its list (nil: none): a key is usually
	// watched and checked again and again (a partition's fetches and
	// appends), and one comparison is cheaper than a lookup in a big map.
	lastKey  K
	lastList *list
}

// get returns key's list, or nil.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) get(key K) *list {
	if sh.lastList != nil && sh.lastKey == key {
		return sh.lastList
	}
	l := sh.lists[key]
	if l != nil {
		sh.lastKey, sh.lastList = key, l
	}
	return l
}

// forget removes key's list l from the map.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) forget(key K, l *list) {
	delete(sh.lists, key)
	if sh.lastList == l {
		sh.forgetLast()
	}
}

// forgetLast clears the remembered key and list.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) forgetLast() {
	var zero K
	sh.lastKey, sh.lastList = zero, nil
}

// maxFree bounds the dropped lists a shard keeps for new keys.
const maxFree = 4

// newList returns an empty list for a new key.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) newList() *list {
	if n := len(sh.free); n > 0 {
		l := sh.free[n-1]
		sh.free[n-1] = nil
		sh.free = sh.free[:n-1]
		return l
	}
	return &list{}
}

// drop removes key's empty list and keeps it for reuse. No goroutine holds
// a list without its shard's lock, so the list is the shard's to reuse.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) drop(key K, l *list) {
	sh.forget(key, l)
	if len(sh.free) < maxFree && cap(l.ops) <= minShrink {
		sh.free = append(sh.free, l)
	}
}

// New returns watchers with n shards, rounded up to a power of two
// (DefaultShards when n <= 0).
func New[K comparable](n int) *Watchers[K] {
	if n <= 0 {
		n = DefaultShards
	}
	n = 1 << bits.Len(uint(n-1))
	w := &Watchers[K]{seed: maphash.MakeSeed(), mask: uint64(n - 1), shards: make([]shard[K], n)}
	for i := range w.shards {
		w.shards[i].lists = make(map[K]*list)
	}
	return w
}

func (w *Watchers[K]) shard(key K) *shard[K] {
	return &w.shards[maphash.Comparable(w.seed, key)&w.mask]
}

// Watch adds s to key's list, creating the list if the key is new. O(1)
// amortised; it allocates only for a new key and when a list grows.
func (w *Watchers[K]) Watch(key K, s *operation.State) {
	w.watch(key, s, 0)
}

// WatchAll adds s to the list of each key in turn, and stops early if s
// completes meanwhile (completed from outside: its entries so far are
// purged later). It counts s once in the added count of Counts.
func (w *Watchers[K]) WatchAll(keys []K, s *operation.State) {
	for i, k := range keys {
		if i > 0 && !operation.IsPending(s) {
			return
		}
		added := 0
		if i == 0 {
			added = 1
		}
		w.watch(k, s, added)
	}
}

func (w *Watchers[K]) watch(key K, s *operation.State, added int) {
	sh := w.shard(key)
	sh.mu.Lock()
	l := sh.get(key)
	if l == nil {
		l = sh.newList()
		sh.lists[key] = l
	}
	sh.entries += 1 - l.add(s)
	sh.added += added
	sh.mu.Unlock()
}

// snapshotSize is how many entries TryCompleteWatched copies on the stack;
// longer lists are copied to the heap.
const snapshotSize = 32

// TryCompleteWatched tries to complete every pending operation watched under
// key, and returns how many it completed. Under the shard lock it first
// drops the entries of operations completed since the list was last
// compacted (through another key, at their deadline, by ForceComplete, or by
// this key's previous check), and copies the others. It then tries them
// with no lock of the watchers held (only each operation's own, around its
// TryComplete), so their callbacks may call back in, even on the same key.
// The entries of the operations it completes stay listed until the key's
// next check, a watch that finds the list full, or the next purge: the
// removal from the lists is lazy, as Kafka's purge makes it for the other
// keys, and a check takes the shard lock once, not twice. A list the
// compaction empties is dropped. O(operations under key).
func (w *Watchers[K]) TryCompleteWatched(key K) int {
	sh := w.shard(key)
	sh.mu.Lock()
	l := sh.get(key)
	if l == nil {
		sh.mu.Unlock()
		return 0
	}
	sh.entries -= l.compact()
	if len(l.ops) == 0 {
		sh.drop(key, l)
		sh.mu.Unlock()
		return 0
	}
	// Copy the entries: trying them without the lock means the list may be
	// appended to or compacted meanwhile, and an index into it would then
	// skip an entry, which would be a lost wake-up.
	var buf [snapshotSize]*operation.State
	snap := append(buf[:0], l.ops...)
	sh.mu.Unlock()

	completed := 0
	for _, s := range snap {
		if operation.TryCompleteWatched(s) {
			completed++
		}
	}
	return completed
}

// Purge drops the entries of completed operations from every list, and the
// lists left empty, and returns how many entries it
// dropped. It resets the added count of Counts. It takes each shard's lock
// in turn and calls no callback.
func (w *Watchers[K]) Purge() int {
	purged := 0
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		sh.added = 0
		for key, l := range sh.lists {
			n := l.compact()
			sh.entries -= n
			purged += n
			if len(l.ops) == 0 {
				sh.drop(key, l)
			}
		}
		sh.mu.Unlock()
	}
	return purged
}

// Remove drops key's list and returns its operations that are still
// pending, oldest first. Entries of completed operations are discarded.
func (w *Watchers[K]) Remove(key K) []*operation.State {
	sh := w.shard(key)
	sh.mu.Lock()
	l := sh.get(key)
	if l == nil {
		sh.mu.Unlock()
		return nil
	}
	sh.forget(key, l)
	sh.entries -= len(l.ops)
	sh.mu.Unlock()
	l.compact()
	return l.ops
}

// RemoveAll drops every list and returns the pending operations they held,
// each once, however many keys it was watched under.
func (w *Watchers[K]) RemoveAll() []*operation.State {
	seen := make(map[*operation.State]struct{})
	var out []*operation.State
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for _, l := range sh.lists {
			for _, s := range l.ops {
				if _, dup := seen[s]; !dup && operation.IsPending(s) {
					seen[s] = struct{}{}
					out = append(out, s)
				}
			}
		}
		clear(sh.lists)
		sh.forgetLast()
		sh.entries = 0
		sh.mu.Unlock()
	}
	return out
}

// Watched returns the number of entries in all lists: an operation counts
// once per key it is watched under, until it is purged (Kafka's
// PurgatorySize). O(shards).
func (w *Watchers[K]) Watched() int {
	n := 0
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		n += sh.entries
		sh.mu.Unlock()
	}
	return n
}

// Keys returns the number of keys with a list: a list is never empty, but
// its entries may all have completed, until a check or a purge. O(shards).
func (w *Watchers[K]) Keys() int {
	n := 0
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		n += len(sh.lists)
		sh.mu.Unlock()
	}
	return n
}

// Counts returns, in one pass over the shards, the lists in the maps and
// the operations watched since the last purge, each counted once (the
// watches of WatchAll). O(shards).
func (w *Watchers[K]) Counts() (lists, added int) {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		lists += len(sh.lists)
		added += sh.added
		sh.mu.Unlock()
	}
	return lists, added
}
