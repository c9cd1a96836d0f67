// Package watchers keeps, for each key, the list of operations watched under
// it, in a map split into shards that each have their own lock (Kafka's
// WatcherList and Watchers). A key's list is created by its first watch and
// dropped when it empties: at the next purge, or at once when the shard
// already keeps its share of emptied lists (see TryCompleteWatched).
//
// # Promises
//
//   - Watch is O(1) amortised and stores one pointer per key watched: a full
//     list drops its completed entries before it grows, so completed
//     operations never make a list grow, and a list that empties to a
//     quarter of its capacity gives the memory back.
//   - TryCompleteWatched touches only the key's list. It tries each
//     operation with no shard lock held (the entries are copied first, so
//     that a concurrent watch or purge cannot make it skip one), so callbacks
//     may call back in, even on the same key. Then it compacts the list
//     under the shard lock, rechecking that the list is still the key's: a
//     concurrent watch is never lost to a removal. A list it empties stays
//     in the map, idle, for the key's next watch (a partition's next fetch
//     then costs no map insert nor delete), up to 8 a shard; beyond, it is
//     dropped at once.
//   - Each shard remembers the key it looked up last, so a hot key (the
//     partition being fetched and appended to) skips the map lookup.
//   - Purge walks every list under its shard's lock, drops the empty ones,
//     idle or not, and calls no callback.
//   - Submitting counts nothing shared between cores: WatchAll counts the
//     operation in its first key's shard, under the lock it takes anyway.
//
// # Lock order
//
// An operation's lock, then a shard's lock. A shard's lock is never held
// while an operation's lock is taken or a callback runs.
package watchers
