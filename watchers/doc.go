// Package watchers keeps, for each key, the list of operations watched under
// it, in a map split into shards that each have their own lock (Kafka's
// WatcherList and Watchers). A key's list is created by its first watch and
// dropped once it is empty: when a check or the next purge compacts it to
// nothing. A few dropped lists are kept for new keys.
//
// # Promises
//
//   - Watch is O(1) amortised and stores one pointer per key watched: a full
//     list drops its completed entries before it grows, so completed
//     operations never make a list grow, and a list that empties to a
//     quarter of its capacity gives the memory back.
//   - TryCompleteWatched touches only the key's list and takes its shard's
//     lock once. Under it, it compacts the list (the entries completed since
//     the last compaction go) and copies the rest; then it tries each
//     operation with no shard lock held (on the copy, so that a concurrent
//     watch or purge cannot make it skip one), so callbacks may call back
//     in, even on the same key. The entries of the operations it completes
//     stay until the key's next check or the next purge, so a hot key's
//     list (a partition whose fetch completes, then the next arrives) stays
//     in the map. A list the compaction empties is dropped; a removal and a
//     concurrent watch are ordered by the shard lock, so no watch is lost.
//   - Each shard remembers the key it looked up last, so a hot key (the
//     partition being fetched and appended to) skips the map lookup.
//   - Purge walks every list under its shard's lock, drops the empty ones,
//     and calls no callback.
//   - Submitting counts nothing shared between cores: WatchAll counts the
//     operation in its first key's shard, under the lock it takes anyway.
//
// # Lock order
//
// An operation's lock, then a shard's lock. A shard's lock is never held
// while an operation's lock is taken or a callback runs.
package watchers
