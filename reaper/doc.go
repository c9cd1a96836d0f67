// Package reaper runs the goroutine that keeps a purgatory moving: it
// advances the timing wheel, waiting at most a bounded time (200ms by
// default, as Kafka's ExpiredOperationReaper) for the earliest deadline, so
// that expired operations are completed, and after each round it lets the
// purgatory purge completed operations from its watcher lists.
//
// # Promises
//
//   - Idle costs nothing but one wake-up per MaxWait: the wait is the
//     timer's, which sleeps until the earliest deadline or the bound.
//   - Start runs one goroutine; Stop interrupts its wait, waits for it to
//     exit and leaves nothing behind. Both are idempotent.
//   - The reaper holds no lock while it waits, advances or purges: the
//     timer and the purger take their own.
package reaper
