// Package purgatory parks requests that cannot be answered yet and answers
// each exactly once: as soon as its condition holds, or when its deadline
// passes (Apache Kafka's DelayedOperationPurgatory). A Kafka-compatible
// broker or proxy parks its long-poll fetches, acks=all produces and group
// joins here.
//
// # How it works
//
// TryCompleteElseWatch submits an operation (see package operation): if
// its condition holds it is answered at once; otherwise it is watched under
// each of its keys (a topic-partition, a group id) and its deadline goes on
// a hierarchical timing wheel (package timer). An event on a key (records
// appended, a member joined) makes the caller call CheckAndComplete(key),
// which tries the operations watched under that key and answers those that
// can complete. The reaper goroutine (package reaper) advances the wheel,
// so that operations whose deadline passed are answered with their
// expiration path, and purges completed operations from the watch lists.
//
// # Promises
//
//   - Exactly once: every operation's OnComplete runs exactly once, whatever
//     races between a key event, expiration, its context, ForceComplete,
//     CancelForKey and Close; OnExpiration runs only for operations that
//     expired. An operation CancelForKey hands back never expires.
//   - No lost wake-up: an event between the first try and the watch is seen
//     by the second try, which runs after the watch, under the operation's
//     lock (Kafka's order).
//   - One rule for errors: a submission that returns an error did not take
//     the operation (the caller answers it); one that returns none answers
//     it, exactly once, with an outcome that says why (Closed, Rejected...).
//   - Callbacks run with no lock of the library held, except the
//     operation's own lock around TryComplete: OnComplete may call
//     CheckAndComplete on any key of any purgatory, and may Close its own.
//   - A panicking callback is recovered, logged and counted; nothing stops.
//     Without a logger it is written to standard error with its stack (at
//     most once a minute per callback), as net/http does: never silently.
//   - Memory is returned: a completed operation leaves the timer at once;
//     the watch entries of completed operations never number more than
//     three times the purge interval, or, when more than sixteen times the
//     interval are live, three sixteenths of the live entries (with a
//     purge interval of 0, an operation leaves every list as it finishes);
//     empty keys are dropped; once a load ends, the next quiet round of the
//     reaper returns the lists to their idle size.
//   - Close answers every pending operation (outcome Closed), unregisters
//     the metrics, and leaves no goroutine running.
//
// # Which goroutine
//
// Every method runs on its caller's goroutine, and so do the callbacks it
// triggers: TryCompleteElseWatch runs TryComplete (twice at most) and, if
// the condition holds at once, OnComplete; CheckAndComplete runs the
// TryComplete and OnComplete of the key's operations; Close runs the
// OnComplete of every pending operation. Expirations run on the timer's
// workers (GOMAXPROCS goroutines by default; on the reaper's goroutine with
// timer.WithWorkers(0); inside ManualClock.Advance on a manual clock). A
// submission context's cancellation runs OnComplete on the goroutine
// context.AfterFunc starts. The package documentation of operation has the
// table.
//
// # Costs
//
//   - TryCompleteElseWatch: O(keys), no allocation beyond the caller's
//     operation and the watch lists' amortised growth; the timer's schedule
//     is O(1). With a context that can be cancelled, add
//     context.AfterFunc's registration and the operation's extras (four
//     allocations in all: BENCHMARKS.md).
//   - CheckAndComplete: O(operations under the key), one lock of the key's
//     shard; it copies the key's entries, on the stack up to 32 and to the
//     heap beyond (one allocation).
//   - Completing: O(1) on the timer (the deadline is unlinked at once).
//   - A purge: O(watch entries), holding each shard's lock while it walks
//     that shard: a lookup in a small table per entry, not a read of its
//     operation (see Purging). Purges happen about once per two purge intervals of
//     entries of completed operations that no check dropped first
//     (completed through another key, expired, forced), or once per eighth
//     of the live entries when that is more; so a purge visits fewer than 9
//     entries per entry it drops, however many operations wait. A smaller
//     interval keeps less garbage and walks more often.
//   - Watched, Garbage: O(shards), 256 by default, each under its lock.
//     Delayed: O(timer shards) with its own timer, O(1) on a shared one.
//
// # Purging
//
// A completed operation's entries stay on its keys' lists (Kafka's design:
// completing stays O(1)) until a check of that key drops them (every
// CheckAndComplete first drops its key's completed entries; those it
// completes itself stay until its next check), a full list compacts itself,
// or a purge walks the lists. The purgatory counts these entries exactly:
// each completion reports the entries it leaves, and the lists count what
// they drop. The limit is the purge interval (WithPurgeInterval, default
// 1000), or a sixteenth of the live entries if that is more. Past twice the
// limit a completion wakes the reaper to purge; past two and a half times
// (the reaper is behind, or there is none) the completing goroutine purges
// itself. A purge visits every entry, so it waits until it drops at least
// twice the limit. The sixteenth keeps purging cheap: a purge walks the
// live entries too, and walking 165,000 of them every 1000 completions
// tripled the CPU time of the performance tool (BENCHMARKS.md). And when a
// whole reaper wait (200ms) passes with no such completion, the load has
// ended and whatever is listed goes. Garbage reports the count.
//
// A purge does not read the operations it walks past. While purges come,
// each completion that leaves entries records its operation's address
// (striped, under a lock the completion takes anyway to count itself), and
// a purge drops the entries whose operations it finds among those recorded
// since the last purge (where checks drop the garbage before any purge is
// due, recording stops until one is): a lookup in a table of a few hundred kilobytes, where reading
// every listed operation's completion word was a cache miss each, and most
// of the tool's CPU. An address is trusted only while the garbage
// collector has not completed a cycle since it was recorded (only then
// could another operation be at it); after one, the operations found are
// read to confirm them. The purge after one that left garbage past the
// limit (entries listed after their operation completed and was looked
// for), the one that ends a load, and Purge read every operation.
//
// With a purge interval of 0, an operation leaves every list as it
// finishes, at the cost of its record of its lists (two allocations) and
// of compacting each of its keys' lists, O(their length), when it
// finishes; a check that completes many operations on one key compacts
// that list once.
//
// # Contexts
//
// TryCompleteElseWatchContext ties an operation to a context.Context, a
// client connection's say: when the context is cancelled the operation
// completes with outcome ContextDone, so nothing waits for its deadline
// when its client has gone; a context deadline earlier than the timeout is
// the deadline. The tie is undone when the operation completes.
//
// # Lock order
//
// An operation's lock, then a watch list shard's lock; the timer's locks
// are leaves. The purgatory itself takes no lock on the hot path (a purge
// mutex serialises purges). Call CheckAndComplete without holding a lock
// that a TryComplete takes; a TryComplete may check its own operation's
// keys (see operation.Operation).
//
// # Metrics
//
// With WithRegisterer, each purgatory exports, labelled purgatory=<name>:
// purgatory_operations_pending, purgatory_operations_delayed,
// purgatory_watch_entries,
// purgatory_watch_entries_completed, purgatory_completions_total{outcome},
// purgatory_expiration_lateness_seconds, purgatory_purges_total,
// purgatory_purged_entries_total and purgatory_callback_panics_total.
// Close unregisters them.
package purgatory
