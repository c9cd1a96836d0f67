// Package watchers is a keyed wait-list: operations (see package operation)
// wait under keys until an event on one of them completes them, with no
// deadline (Kafka's Watchers and WatcherList). Package purgatory is
// watchers plus deadlines, a reaper, metrics and Close; use watchers alone
// when nothing waits for a deadline.
//
// # How it works
//
// Each key has a list of the operations watched under it, in a map split
// into shards with a lock each (DefaultShards, Kafka uses 512), so keys in
// different shards never contend. Watch runs Kafka's order under the
// operation's lock: try; list it under each key; try again, so that an
// event between the first try and the listing is seen by the second try,
// and one after it finds the operation listed. CheckAndComplete(key) tries
// the operations listed under key.
//
// # Costs
//
//   - Watch: O(keys) amortised; eight bytes a key watched; it allocates only
//     for a new key's list and when a list grows. A full list drops its
//     completed entries before it grows.
//   - CheckAndComplete: O(operations under key). It holds the key's shard
//     lock once, to drop the entries completed since the key's last check
//     and copy the rest (on the stack up to 32, one allocation beyond);
//     then it tries them with no lock of the package held.
//   - Purge: O(entries), holding each shard's lock while it walks that
//     shard's lists.
//
// # Garbage
//
// A completed operation's entries stay listed until its key's next check,
// a watch that finds the list full, or Purge: until then each keeps its
// operation reachable. Call Purge now and then when operations complete
// other than through their keys (ForceComplete), or through one of several
// keys. A purgatory bounds this for you.
//
// # Which goroutine, which lock
//
// Every method runs on its caller's goroutine, and so do the callbacks it
// triggers: TryComplete under the operation's lock, OnComplete with no
// lock held, so it may call back in, even on the same key. Lock order: an
// operation's lock, then a shard's lock; a shard's lock is never held while
// an operation's lock is taken or a callback runs.
package watchers
