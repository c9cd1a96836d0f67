// Package newcomer holds the three programs issue 25's newcomer wrote from
// the README and go doc alone, each twice: on the library (impl=purgatory)
// and the way one writes it without (impl=naive): a map of channels under
// one mutex and a time.AfterFunc per wait. Its tests check that the two
// versions of a program answer alike, on virtual time (testing/synctest);
// its benchmarks run them side by side as sub-benchmarks impl=purgatory
// and impl=naive, so that
//
//	make bench-newcomer     # go test -bench . ./test/newcomer, then benchstat -col /impl
//
// prints their ratio: time, CPU time, bytes and allocations per operation.
//
// # The programs
//
//   - LongPoll (longpoll.go): waiters parked per key until the key's next
//     event or their timeout, as examples/longpoll's GETs. On the library a
//     waiter is an operation watched under its key, and an event is
//     CheckAndComplete; the naive version keeps a slice of waiters per key
//     and takes a waiter off it, in O(waiters of the key), when its timer
//     fires.
//   - Watchdogs (watchdog.go): leases renewed every period, with a fixed
//     delay, until unlocked, as Redisson's lock watchdog. On the library a
//     lease is timer.ScheduleWithFixedDelay and Unlock is StopAndWait; the
//     naive version is a time.AfterFunc that renews under the lease's mutex
//     and re-arms itself, and Unlock takes that mutex.
//   - Counters (counter.go): waiters for a key's count to reach a target,
//     or their timeout, as an acks=all produce waits for the high
//     watermark. On the library a waiter is an operation whose TryComplete
//     compares the count; the naive version scans the key's waiters at
//     every increment.
//
// Each naive version is correct (every waiter answered once, a timer
// stopped when the event wins, no renewal after Unlock returns): the
// comparison is with a program that works, not with a strawman.
//
// # What a benchmark operation is
//
// One waiter, or one lease, from start to answer, in rounds of up to 1024
// (roundSize):
//
//   - BenchmarkLongPoll: each waiter parks on one of 16 keys (56 to a key
//     in a full round) with a one-minute timeout, and is answered by one
//     event on its key; every eighth instead parks on one of 16 keys with
//     no events, with a 1ms timeout, and times out.
//   - BenchmarkWatchdog: each lease renews every millisecond until it has
//     renewed three times, then is unlocked.
//   - BenchmarkCounterWait: each waiter waits on one of 16 keys for its
//     count to grow by 1 to 4, and the round then adds 1 to every key four
//     times; every eighth waits for a count that never comes, 1ms.
//
// Rounds wait for timeouts and renewals on the real clock, so ns/op
// counts some idle time; cpu-ns/op (the process's CPU time per operation)
// is the cost, and B/op and allocs/op the garbage.
package newcomer
