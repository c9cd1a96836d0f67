// Package timer is a hierarchical timing wheel: the clock under every delayed
// operation of the purgatory, after Apache Kafka's SystemTimer and the paper by
// Varghese and Lauck. Scheduling and cancelling cost O(1) and allocate
// nothing, and an idle timer sleeps until its earliest deadline instead of
// ticking.
//
// # Levels and buckets
//
// Time is counted in ticks (1ms by default). A level is a ring of n buckets
// (20 by default); a bucket of level k covers n^k ticks, so level k spans
// n^(k+1) ticks. A task goes to the finest level whose ring still reaches its
// deadline; coarser levels are created on demand, so a deadline years away
// costs a handful of levels, never an overflow. With tick 1 and n = 3, at
// time c:
//
//	level 1  [c,c]     [c+1,c+1]   [c+2,c+2]
//	level 2  [c,c+2]   [c+3,c+5]   [c+6,c+8]
//	level 3  [c,c+8]   [c+9,c+17]  [c+18,c+26]
//
// Each level's ring turns when the time crosses one of its buckets: at c+3,
// level 1 holds [c+3]..[c+5], level 2 moves to [c+3,c+5] [c+6,c+8]
// [c+9,c+11], and level 3 stays where it was.
//
// A bucket is a circular doubly-linked list with a sentinel, and a Task embeds
// its own links (it is intrusive), so linking is O(1) and unlinking needs
// neither the bucket nor a search. Each task is 48 bytes of timer state.
//
// # The delay queue and AdvanceClock
//
// A bucket's expiry is the first tick of its span. Buckets, not tasks, go into
// the delay queue (a min-heap by expiry), and only when a bucket's expiry
// changes, that is once per turn of its level; the queue holds at most a few
// hundred buckets whatever the number of tasks. AdvanceClock sleeps until the
// earliest bucket expires (or a bound), then flushes every expired bucket: a
// task whose deadline has come is handed to run, the others are placed again
// and fall to a finer level. With tick 1ms and n = 20, a task due in 28ms sits
// in level 2 bucket 1, drops to level 1 bucket 8 at 20ms and runs at 28ms.
//
// Unlike Kafka's timer, a deadline is rounded up to a tick boundary and a task
// only ever runs from a finest-level bucket, so no task runs before its
// deadline; on an idle machine it runs within one tick after. The clock is
// monotonic and AdvanceClock catches up from it after a stall, flushing every
// bucket it passed in order: no tick is dropped.
//
// Scheduling a deadline earlier than the one AdvanceClock sleeps towards wakes
// it. Nothing else does: with nothing due the timer costs no CPU.
//
// # Running tasks
//
// Expired tasks run on a fixed set of worker goroutines (GOMAXPROCS by
// default), fed in batches through an unbounded queue, so a slow task never
// delays the clock and no goroutine is started per expiry. A panic is
// recovered, logged through the *zap.Logger given with WithLogger (without
// one, written to standard error with its stack, at most once a minute per
// kind of task) and counted in Stats; the timer goes on.
//
// Cancel and expiry race safely: a flush takes each task off its list under
// the lock of the task's shard (below), so either Cancel unlinks the task
// first and reports true and the task never runs, or the flush took it and
// Cancel reports false and the task runs exactly once.
//
// # Shards
//
// A Timer splits its tasks over several wheels (four per core by default;
// WithShards), each with its own lock, and a task always goes to the wheel
// its address picks. Tasks scheduled and cancelled on two cores then seldom
// wait for one lock, and never share a counter. The advancing goroutine
// flushes every wheel in turn and sleeps until the earliest bucket of any;
// it publishes that wake-up time to each wheel, so a Schedule compares with
// it under its own wheel's lock. The wheels' buckets expire on the same
// ticks, so they wake it no more often than one wheel would.
//
// # Clocks and tests
//
// A Clock reads monotonic time and makes alarms. A ManualClock's Advance
// runs every task due by the new time synchronously, tick by tick in
// deadline order (within a tick, shards may interleave), each seeing the
// clock at its bucket's expiry; the timer starts no goroutine. Tests are
// deterministic without sleeping.
//
// # Closing
//
// Close is idempotent. It stops the goroutines the timer owns, lets the tasks
// already expired run, and returns the tasks still pending, which never run:
// nothing is dropped silently. A task may close its own timer: Close then
// waits for every goroutine of the timer but the one running that task.
//
// # Files
//
// One concept each, so that a task can be followed through them: timer.go is
// the facade (New, Schedule, Cancel); wheel.go, bucket.go and queue.go are
// the levels, their buckets and the delay queue; shard.go splits the tasks
// over wheels; advance.go moves the clock and flushes what is due; run.go
// and executor.go run the due tasks; close.go stops the timer; periodic.go
// builds repeating schedules on one task; divide.go is the tick arithmetic;
// clock.go and manual.go are the clocks.
//
// # Lock order
//
// Timer.advanceMu (serialises flushing), then one shard's mu (the wheel, its
// buckets and every linked Task), then the executor's mu. ManualClock's own
// locks come before any of them and are never held while a timer advances.
// No lock of the timer is held while a task runs; a task may schedule,
// cancel and close on its timer, but a task running on the advancing
// goroutine (a timer without workers) must not advance that timer.
package timer
