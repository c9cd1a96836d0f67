// Package purgatory parks requests that cannot be answered yet and answers
// each exactly once: as soon as its condition holds, or when its deadline
// passes (Apache Kafka's DelayedOperationPurgatory). A Kafka-compatible
// broker parks its long-poll fetches, acks=all produces and group joins
// here.
//
// # How it works
//
// TryCompleteElseWatch submits an operation (see package operation): if its
// condition holds it is answered at once; otherwise it is watched under each
// of its keys (a topic-partition, a group id) and its deadline goes on a
// hierarchical timing wheel (package timer). An event on a key (records
// appended, a member joined) makes the broker call CheckAndComplete(key),
// which tries the operations watched under that key and answers those that
// can complete. The reaper goroutine (package reaper) advances the wheel, so
// that operations whose deadline passed are answered with their expiration
// path, and purges completed operations from the watcher lists.
//
// # Promises
//
//   - Exactly once: every operation's OnComplete runs exactly once, whatever
//     races between a key event, expiration, ForceComplete, CancelForKey and
//     Close; OnExpiration runs only for operations that expired.
//   - No lost wake-up: an event between the first try and the watch is seen
//     by the second try, which runs after the watch, under the operation's
//     lock (Kafka's order).
//   - Cost: submitting and completing are O(keys) and allocate nothing but
//     the operation; the timer's schedule and cancel are O(1);
//     CheckAndComplete touches only its key's operations.
//   - Callbacks run with no lock of the library held, except the
//     operation's own lock around TryComplete: OnComplete may call
//     CheckAndComplete on any key of any purgatory.
//   - A panicking callback is recovered, logged and counted; nothing stops.
//   - Memory is returned: a completed operation leaves the timer at once and
//     its watcher lists within one purge (or at its key's next check);
//     empty keys are dropped.
//   - Close answers every pending operation (outcome Closed) and leaves no
//     goroutine running.
//
// # Purging
//
// Completed operations stay on their keys' lists until a purge (Kafka's
// design: completing stays O(1)), or until a key's next CheckAndComplete,
// which first drops the entries of its list that completed since. Unlike
// Kafka's, a check leaves the entries of the operations it completes too:
// it then takes its watcher shard's lock once instead of twice, and Watched
// counts them until they go. The reaper purges when more than the purge
// interval (default 1000) are listed and they are at least as many as the
// live ones, so each purge removes at least as much as it walks, and purges
// whatever is listed once nothing waits. A full list also drops its
// completed entries before it grows.
//
// # Lock order
//
// An operation's lock, then a watcher shard's lock; the timer's locks are
// leaves. The purgatory itself has no lock on the hot path. Call
// CheckAndComplete without holding a lock that a TryComplete takes.
//
// # Metrics
//
// With WithRegisterer, each purgatory exports, labelled purgatory=<name>:
// purgatory_operations_watched, purgatory_operations_delayed,
// purgatory_completions_total{outcome}, purgatory_expiration_lateness_seconds,
// purgatory_purges_total, purgatory_purged_entries_total and
// purgatory_callback_panics_total.
package purgatory
