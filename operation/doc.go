// Package operation is the contract between a delayed operation and the
// purgatory that holds it (Kafka's DelayedOperation).
//
// The user implements Operation: TryComplete (is the condition true now?),
// OnComplete (answer the request) and OnExpiration (after OnComplete, only
// when the deadline passed), and embeds State, the library's part: the
// completion word set by compare-and-swap, the intrusive timer task of the
// deadline, and the lock TryComplete runs under.
//
// # Promises
//
//   - Exactly once: OnComplete runs exactly once for every submitted
//     operation, whichever of its condition, its deadline, ForceComplete or
//     its purgatory's Close completes it; the compare-and-swap on the
//     completion word elects the one goroutine that runs the callbacks.
//     OnExpiration runs only for an operation that expired, after
//     OnComplete. Outcome tells OnComplete which it was.
//   - TryComplete runs with the operation's lock held and is never called
//     after the operation completed. OnComplete and OnExpiration run with no
//     lock held, not even the operation's own, so they may call back into
//     any purgatory, even with a lock shared between operations (ShareLock),
//     where Kafka relies on a reentrant lock.
//   - A panicking callback is recovered and reported to the Observer; a
//     panic in TryComplete counts as "not yet" and releases the lock.
//   - No allocation: State is embedded, and its timer task is intrusive.
//
// # Lock order
//
// The operation's lock is taken first, then (inside Submit, while
// watching) a watcher shard's lock. The timer's locks are leaves, never held
// while another is taken. Nothing takes an operation's lock while holding
// one of the others. Do not call CheckAndComplete while holding a lock that
// some TryComplete takes.
package operation
