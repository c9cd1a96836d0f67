// Package lifecycle is the machinery of a delayed operation, shared by the
// library's packages and kept out of their documentation: the completion
// word, exactly-once completion, the lock TryComplete runs under, the timer
// task of the deadline, Kafka's try-watch-try submission, and the extras an
// operation only pays for when it uses them (a done channel, a context, the
// record of its watch lists when they are emptied eagerly).
//
// Package operation wraps State in its public State and documents what a
// user calls; package purgatory and the watch lists drive the functions
// here.
//
// # The completion word
//
// One atomic 64-bit word per operation:
//
//	bits 0-2   outcome (Pending until it completes)
//	bit  3     started: bound to a timer and an observer by Start
//	bit  4     cancelled: taken off its keys by CancelForKey
//	bit  5     scheduled: on a shared timer, counted by its purgatory
//	bit  6     finished: its callbacks have run (for Done)
//	bit  7     trying: a try of the library holds the operation's lock
//	bit  8     retry: a check found it trying and left it to that try
//	bit  9     counted: it waited (was listed), so its owner counts it pending
//	bits 32-63 listed: the watch entries the operation has in lists
//
// Completing is one compare-and-swap that sets the outcome; the goroutine
// whose swap succeeds runs the callbacks, so they run exactly once. The
// swap also reads how many watch entries the operation had: from then on
// they are garbage, counted by the observer until the lists drop them.
//
// # Checks that find the lock taken
//
// Go's mutex is not re-entrant: a TryComplete that calls CheckAndComplete
// on its own operation's key would wait for the lock it holds. So a check
// that cannot take the lock at once looks at the trying flag, set by the
// library's tries (Listed's and TryWatched's) while they hold the lock:
// if it is set, the check sets the retry flag and leaves; the try clears
// both flags in one atomic AND when TryComplete returns, sees the retry,
// and tries again (Kafka's maybeTryComplete, KAFKA-6653, with a per-try
// flag in place of its reentrant lock). Without the trying flag the lock
// is held by the operation's owner changing what TryComplete reads, by a
// submission listing it, or by another operation sharing it, and the
// check waits for it.
//
// # Lock order
//
// An operation's lock (its own, or the one given to ShareLock), then a
// watch list shard's lock, then the operation's extras' lock. The timer's
// locks are leaves. No callback runs with any of them held but the
// operation's own around TryComplete.
package lifecycle
