package watchlist

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// DefaultShards is the number of shards when New is given zero. Kafka uses
// 512; BENCHMARKS.md has the measurement behind this default.
const DefaultShards = 256

// Watchers maps keys to the operations watched under them, in shards that
// each have their own lock, so that keys in different shards never contend.
type Watchers[K comparable] struct {
	seed   maphash.Seed // immutable
	mask   uint64       // shards-1; immutable
	eager  bool         // immutable: lists are emptied as operations finish
	shards []shard[K]
}

type shard[K comparable] struct {
	mu      sync.Mutex // guards the following, and every list of the shard
	lists   map[K]*list[K]
	free    []*list[K] // dropped lists kept for new keys, with their capacity
	entries int        // entries in lists, completed ones included until dropped
	dropped int64      // entries of completed operations dropped, ever
	// submitted counts the operations watched, ever, each in the shard of
	// its first key: with the completions its owner counts, it gives the
	// operations pending without a shared counter on the hot path.
	submitted int64

	// The key looked up last and its list (nil: none): a key is usually
	// watched and checked again and again (a partition's fetches and
	// appends), and one comparison is cheaper than a lookup in a big map.
	lastKey  K
	lastList *list[K]
}

// New returns watchers with n shards, rounded up to a power of two
// (DefaultShards when n <= 0). With eager, an operation's entries leave
// every list as it finishes (see Release).
func New[K comparable](n int, eager bool) *Watchers[K] {
	if n <= 0 {
		n = DefaultShards
	}
	n = 1 << bits.Len(uint(n-1))
	w := &Watchers[K]{seed: maphash.MakeSeed(), mask: uint64(n - 1), eager: eager, shards: make([]shard[K], n)}
	for i := range w.shards {
		w.shards[i].lists = make(map[K]*list[K])
	}
	return w
}

func (w *Watchers[K]) shard(key K) *shard[K] {
	return &w.shards[maphash.Comparable(w.seed, key)&w.mask]
}

// get returns key's list, or nil.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) get(key K) *list[K] {
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
func (sh *shard[K]) forget(key K, l *list[K]) {
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

// newList returns an empty list for key.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) newList(key K) *list[K] {
	if n := len(sh.free); n > 0 {
		l := sh.free[n-1]
		sh.free[n-1] = nil
		sh.free = sh.free[:n-1]
		l.key = key
		return l
	}
	return &list[K]{key: key}
}

// drop removes key's empty list and keeps it for reuse. A list is only
// touched under its shard's lock, so it is the shard's to reuse; an
// operation's record may still name it (eager mode), and compacting a list
// reused for another key only drops completed entries, which is always
// right.
//
// REQUIRES: sh.mu held; l is key's list and empty.
func (sh *shard[K]) drop(key K, l *list[K]) {
	sh.forget(key, l)
	if len(sh.free) < maxFree && cap(l.ops) <= minShrink {
		sh.free = append(sh.free, l)
	}
}

// compactLocked compacts l and counts what it dropped; an emptied list
// still in the map is dropped from it.
//
// REQUIRES: sh.mu held.
func (sh *shard[K]) compactLocked(l *list[K]) int {
	n := l.compact()
	sh.entries -= n
	sh.dropped += int64(n)
	if len(l.ops) == 0 && l.checking == 0 && sh.lists[l.key] == l {
		sh.drop(l.key, l)
	}
	return n
}

// WatchAll adds s to the list of each key, creating the lists of new keys,
// and counts s submitted (Submitted), under the first key's shard lock,
// which it takes anyway. Every key gets its entry, even if s completes
// meanwhile: Start counted them all. O(keys) amortised; it allocates only
// for a new key, when a list grows, and in eager mode for the operation's
// record of its lists.
func (w *Watchers[K]) WatchAll(keys []K, s *lifecycle.State) {
	for i, k := range keys {
		w.watch(k, s, i == 0)
	}
}

// Watch adds s to key's list.
func (w *Watchers[K]) Watch(key K, s *lifecycle.State) { w.watch(key, s, false) }

// watch adds s to key's list, and with count counts s submitted.
func (w *Watchers[K]) watch(key K, s *lifecycle.State, count bool) {
	sh := w.shard(key)
	sh.mu.Lock()
	if count {
		sh.submitted++
	}
	l := sh.get(key)
	if l == nil {
		l = sh.newList(key)
		sh.lists[key] = l
	}
	if w.eager && !lifecycle.Listing(s, newListing[K], func(r any) {
		lg := r.(*listing[K])
		lg.lists = append(lg.lists, listed[K]{l, sh})
	}) {
		// Finished already: Release has run, so nothing would drop the
		// entry; it is garbage at birth. Count it dropped at once.
		sh.dropped++
		if len(l.ops) == 0 {
			sh.drop(key, l)
		}
		sh.mu.Unlock()
		return
	}
	removed := l.add(s)
	sh.entries += 1 - removed
	sh.dropped += int64(removed)
	sh.mu.Unlock()
}

// Release drops s's entries from every list it was watched in, in eager
// mode, once s has finished (its callbacks ran). Lists a check is trying
// are left to that check, which compacts them when it ends. O(total length
// of those lists).
func (w *Watchers[K]) Release(s *lifecycle.State) {
	r, _ := lifecycle.TakeListing(s).(*listing[K])
	if r == nil {
		return
	}
	for _, ls := range r.lists {
		l, sh := ls.l, ls.sh
		sh.mu.Lock()
		if l.checking == 0 {
			sh.compactLocked(l)
		}
		sh.mu.Unlock()
	}
}

// snapshotSize is how many entries TryCompleteWatched copies on the stack;
// longer lists are copied to the heap.
const snapshotSize = 32

// TryCompleteWatched tries to complete every pending operation watched
// under key, and returns how many it completed. Under the shard lock it
// first drops the entries of operations completed since the list was last
// compacted, and copies the others. It then tries them with no lock of the
// watchers held (only each operation's own, around its TryComplete), so
// their callbacks may call back in, even on the same key. Without eager
// mode, the entries of the operations it completes stay listed until the
// key's next check, a watch that finds the list full, or the next purge; in
// eager mode it compacts the list once more at the end. O(operations under
// key).
func (w *Watchers[K]) TryCompleteWatched(key K) int {
	sh := w.shard(key)
	sh.mu.Lock()
	l := sh.get(key)
	if l == nil {
		sh.mu.Unlock()
		return 0
	}
	if n := l.compact(); n > 0 {
		sh.entries -= n
		sh.dropped += int64(n)
		if len(l.ops) == 0 && l.checking == 0 {
			sh.drop(key, l)
			sh.mu.Unlock()
			return 0
		}
	}
	if len(l.ops) == 0 {
		sh.mu.Unlock()
		return 0
	}
	// Copy the entries: trying them without the lock means the list may be
	// appended to or compacted meanwhile, and an index into it would then
	// skip an entry, which would be a lost wake-up.
	var buf [snapshotSize]*lifecycle.State
	snap := append(buf[:0], l.ops...)
	if w.eager {
		l.checking++
	}
	sh.mu.Unlock()

	completed := 0
	for _, s := range snap {
		if lifecycle.TryWatched(s) {
			completed++
		}
	}
	if w.eager {
		sh.mu.Lock()
		l.checking--
		if l.checking == 0 {
			sh.compactLocked(l)
		}
		sh.mu.Unlock()
	}
	return completed
}

// Purge drops the entries of completed operations from every list, and the
// lists left empty, and returns how many entries it dropped. It takes each
// shard's lock in turn, holding it while it walks that shard's lists
// (O(entries of the shard)), and calls no callback.
func (w *Watchers[K]) Purge() int {
	purged := 0
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for _, l := range sh.lists {
			purged += sh.compactLocked(l)
		}
		sh.mu.Unlock()
	}
	return purged
}

// PurgeKnown is Purge for the completed operations done records: it drops
// their entries from every list, and the lists left empty, and returns how
// many entries it dropped. While no garbage collection cycle has completed
// since done's addresses were recorded, it reads no operation (see
// AddrSet), so it costs a lookup per entry instead of a cache miss.
// Entries of completed operations missing from done stay for a later
// purge.
func (w *Watchers[K]) PurgeKnown(done *AddrSet) int {
	purged := 0
	confirm := false
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		if len(sh.lists) == 0 {
			sh.mu.Unlock()
			continue
		}
		// Read under the lock: an operation listed in this shard since a
		// cycle completed got here before the lock was taken.
		confirm = confirm || GCCycles() != done.since
		for _, l := range sh.lists {
			n := l.compactKnown(done, confirm)
			sh.entries -= n
			sh.dropped += int64(n)
			purged += n
			if len(l.ops) == 0 && l.checking == 0 {
				sh.drop(l.key, l)
			}
		}
		sh.mu.Unlock()
	}
	return purged
}

// Remove drops key's list and returns the operations it held that are
// still pending, oldest first, each counted out of the lists
// (lifecycle.Unlist). Entries of completed operations are dropped.
func (w *Watchers[K]) Remove(key K) []*lifecycle.State {
	sh := w.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.get(key)
	if l == nil {
		return nil
	}
	sh.forget(key, l)
	var out []*lifecycle.State
	for _, s := range l.ops {
		if lifecycle.IsPending(s) && lifecycle.Unlist(s) {
			out = append(out, s)
		} else {
			sh.dropped++
		}
	}
	sh.entries -= len(l.ops)
	// A record naming the list (eager mode) finds it empty from now on.
	clear(l.ops)
	l.ops = l.ops[:0]
	return out
}

// RemoveAll drops every list and returns the pending operations they held,
// each once, however many keys it was watched under.
func (w *Watchers[K]) RemoveAll() []*lifecycle.State {
	seen := make(map[*lifecycle.State]struct{})
	var out []*lifecycle.State
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for _, l := range sh.lists {
			for _, s := range l.ops {
				if _, dup := seen[s]; !dup && lifecycle.IsPending(s) {
					seen[s] = struct{}{}
					out = append(out, s)
				}
			}
			// Every entry counts as dropped: those of completed operations
			// were reported left behind, and the pending ones will be when
			// they complete (Close completes them next), so the garbage
			// count stays exact and no completion of Close's sets off a
			// reading of the lists or a purge.
			sh.dropped += int64(len(l.ops))
			clear(l.ops)
			l.ops = l.ops[:0]
		}
		clear(sh.lists)
		sh.free = nil
		sh.forgetLast()
		sh.entries = 0
		sh.mu.Unlock()
	}
	return out
}

// Watched returns the number of entries in all lists: an operation counts
// once per key it is watched under, until its entry is dropped (Kafka's
// PurgatorySize). O(shards).
func (w *Watchers[K]) Watched() int {
	return int(w.sum(func(sh *shard[K]) int64 { return int64(sh.entries) }))
}

// Keys returns the number of keys with a list. A list is never empty, but
// its entries may all have completed, until a check or a purge.
// O(shards).
func (w *Watchers[K]) Keys() int {
	return int(w.sum(func(sh *shard[K]) int64 { return int64(len(sh.lists)) }))
}

// Dropped returns how many entries of completed operations the lists have
// dropped since New: with the entries completions left behind (reported to
// the Observer), it gives the garbage still listed. O(shards).
func (w *Watchers[K]) Dropped() int64 {
	_, dropped := w.Counts()
	return dropped
}

// Submitted returns how many operations WatchAll has listed since New,
// each once however many keys it has. O(shards).
func (w *Watchers[K]) Submitted() int64 {
	return w.sum(func(sh *shard[K]) int64 { return sh.submitted })
}

// sum adds up field over the shards, each read under its lock.
func (w *Watchers[K]) sum(field func(*shard[K]) int64) int64 {
	var n int64
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		n += field(sh)
		sh.mu.Unlock()
	}
	return n
}

// Counts returns Watched and Dropped in one reading. O(shards).
func (w *Watchers[K]) Counts() (entries int, dropped int64) {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		entries += sh.entries
		dropped += sh.dropped
		sh.mu.Unlock()
	}
	return entries, dropped
}
