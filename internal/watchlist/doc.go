// Package watchlist keeps, for each key, the list of operations watched
// under it, in a map split into shards that each have their own lock
// (Kafka's WatcherList and Watchers). It is the machinery behind package
// watchers and package purgatory, kept out of their documentation.
//
// # Lists
//
// A key's list is a slice of *lifecycle.State, oldest first: eight bytes a
// watch, no allocation beyond the slice's amortised growth. It is created
// by its key's first watch and dropped once a compaction empties it; a few
// dropped lists are kept for new keys. A full list drops its completed
// entries before it grows, so completed operations never make a list grow,
// and a list emptied to a quarter of its capacity gives its memory back.
//
// # Checks
//
// TryCompleteWatched takes its shard's lock once: under it, it drops the
// entries completed since the list was last compacted and copies the rest
// (on the stack up to 32 entries, on the heap beyond); then it tries each
// with no shard lock held, so callbacks may call back in, even on the same
// key, and a concurrent watch or purge cannot make it skip one.
//
// # Garbage
//
// A completed operation's entries are garbage until a list drops them: at
// its key's next check, when a full list compacts itself, at a purge, or,
// in eager mode, as the operation finishes. The lists count what they drop
// (Dropped), and each completion reports how many entries it left behind
// (lifecycle.Observer), so that their owner knows exactly how much garbage
// there is and purges before it passes a bound.
//
// In eager mode every watch records its list in the operation's extras, and
// Release, called when the operation has finished, compacts each of them:
// a completed operation is referenced by no list once its callbacks have
// run. A check holds its list's compaction back until it has tried every
// operation on it, then compacts once, so that a check completing n of m
// operations costs O(m), not O(n×m).
//
// # Lock order
//
// An operation's lock, then a shard's lock, then the operation's extras'
// lock. A shard's lock is never held while an operation's lock is taken or
// a callback runs.
package watchlist
