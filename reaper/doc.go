// Package reaper runs the goroutine that keeps a purgatory moving (Kafka's
// ExpiredOperationReaper): it advances the timing wheel, waiting at most a
// bounded time (200ms by default, as Kafka) for the earliest deadline, so
// that expired operations are completed, and after each round it gives the
// purgatory its turn to purge completed operations from its watch lists.
// A purgatory starts and stops its own; use this package directly to drive
// a timer of your own (built with timer.WithAutoAdvance(false)) together
// with a purge of your own.
//
// # Promises
//
//   - Idle costs nothing but one wake-up per MaxWait: the wait is the
//     timer's, which sleeps until the earliest deadline or the bound.
//   - Wake ends the current wait, so a purge asked for runs at once.
//   - Start runs one goroutine; Stop interrupts its wait, waits for it to
//     exit and leaves nothing behind. Both are idempotent. Stop may be
//     called from the reaper's own goroutine (an expiration closing its
//     purgatory, on a timer without workers); it then returns without
//     waiting for itself.
//   - The reaper holds no lock while it waits, advances or purges: the
//     timer and the purger take their own. Expirations run inside the
//     clock's advance: on the timer's workers, or on the reaper's
//     goroutine when the timer has none.
package reaper
