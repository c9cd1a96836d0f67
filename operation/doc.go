// Package operation is the contract between a delayed operation and the
// purgatory that holds it (Kafka's DelayedOperation).
//
// An operation embeds State, the library's part, and implements
// TryComplete (is its condition true now?) and OnComplete (answer the
// request); OnExpiration (after OnComplete, only when the deadline passed)
// is optional, as State provides one that does nothing. Func builds one
// from functions.
//
// # Promises
//
//   - Exactly once: OnComplete runs exactly once for every submitted
//     operation, whichever of its condition, its deadline, its context,
//     ForceComplete or its purgatory's Close completes it: one
//     compare-and-swap on State's completion word elects the goroutine
//     that runs the callbacks. OnExpiration runs only for an operation that
//     expired, after OnComplete. Outcome tells OnComplete which it was.
//   - TryComplete runs with the operation's lock held and is never called
//     after the operation completed. OnComplete and OnExpiration run with
//     no lock held, not even the operation's own, so they may call back
//     into any purgatory (even Close their own), also with a lock shared
//     between operations (ShareLock), where Kafka relies on a reentrant
//     lock.
//   - A panicking callback is recovered, logged and counted by its
//     purgatory (written to standard error without a logger, never
//     silently); a panic in TryComplete counts as "not yet" and releases
//     the lock; a panic in OnComplete still counts as answered.
//   - No allocation: State is embedded, and its timer task is intrusive.
//     Done and a submission context are the only things that allocate,
//     and only for the operations that use them.
//
// # Which goroutine runs what
//
// TryComplete runs on the goroutine that submits the operation (before and
// after it is watched) and on each goroutine that calls CheckAndComplete on
// one of its keys. OnComplete, and OnExpiration after it, run on the
// goroutine that completed the operation:
//
//	completed by                        runs on
//	its condition, at submission        the submitter, before TryCompleteElseWatch returns
//	its condition, after an event       the caller of CheckAndComplete
//	its deadline                        a worker of the timer (the reaper's goroutine
//	                                    or ManualClock.Advance's caller without workers)
//	its context                         the goroutine context.AfterFunc starts
//	ForceComplete, CancelForKey's caller the caller of ForceComplete
//	Close                               the caller of Close
//
// So OnComplete must not block for long: on a timer worker it delays the
// expirations behind it, in CheckAndComplete it delays the caller (a
// broker's produce path). Hand slow work to a goroutine of your own.
//
// # Waiting for the answer
//
// State.Done returns a channel closed once the operation has completed and
// its callbacks have run, and State.Wait blocks on it with a context: a
// request handler can park on its operation and find the answer written
// when it wakes.
//
// # Lock order
//
// The operation's lock (its own, or the one given to ShareLock) comes
// first; the library's locks (watch list shards, the timer's) come after
// it and are never held while a callback runs. Do not call
// CheckAndComplete while holding a lock that some TryComplete takes (a
// TryComplete checking its own operation's keys is the exception: see
// Operation.TryComplete), and hold the operation's lock (State.Mutex)
// while changing what its TryComplete reads.
package operation
