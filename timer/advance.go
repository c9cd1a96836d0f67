package timer

import (
	"context"
	"math"
	"runtime"
	"time"

	"github.com/gopurgatory/purgatory/internal/goid"
)

// flushChunk is how many tasks a flush moves before it lets schedulers take
// the lock, so that a burst of a million expiries does not stall Schedule.
const flushChunk = 1024

// AdvanceClock waits at most maxWait for the earliest bucket to expire, then
// flushes every bucket due by the clock's time: tasks due are handed to run,
// the others fall to a finer level. It reports whether any bucket was
// flushed. With nothing due it sleeps until the earliest deadline or maxWait,
// whichever is first; a Schedule that creates an earlier deadline wakes it.
// It returns false at once after Close, and when ctx is done, even while
// it waits for another advance (ManualClock.Advance running a task, say).
//
// This is Kafka's SystemTimer.advanceClock. A Timer built with auto-advance
// (the default on the real clock) calls it on its own goroutine; call it
// yourself when you turned that off.
func (tm *Timer) AdvanceClock(ctx context.Context, maxWait time.Duration) bool {
	return tm.advanceClock(ctx.Done(), maxWait)
}

func (tm *Timer) advanceClock(stop <-chan struct{}, maxWait time.Duration) bool {
	now := tm.clock.Now()
	limit := satAdd(now, maxWait)
	for {
		if tm.advance(now, true, stop) {
			return true
		}
		if tm.closed.Load() {
			return false
		}
		until, ok := tm.publishSleep(limit)
		if !ok {
			now = tm.clock.Now()
			continue // a bucket earlier than until appeared meanwhile
		}

		now = tm.clock.Now()
		if now >= limit {
			return tm.advance(now, true, stop)
		}
		if wait := until - now; wait > 0 {
			alarm := tm.clock.NewAlarm(wait)
			select {
			case <-alarm.C():
			case <-tm.wake:
			case <-stop:
				alarm.Stop()
				return false
			case <-tm.done:
				alarm.Stop()
				return false
			}
			alarm.Stop()
			tm.wakeups.Add(1)
			now = tm.clock.Now()
		}
	}
}

// publishSleep finds when the earliest bucket of any shard is due (at most
// limit) and publishes that as every shard's sleepUntil, so that a Schedule
// placing an earlier bucket wakes the waiter. It reports false if, by the
// time a shard is told, that shard has a bucket due earlier than the time
// found: a Schedule placed it after the first pass, and may have compared
// it with the older sleepUntil. A Schedule that reads the new sleepUntil
// compares with it; one before it is seen by the second pass.
func (tm *Timer) publishSleep(limit time.Duration) (time.Duration, bool) {
	until := limit
	if at, ok := tm.nextExpiry(); ok {
		until = min(until, at)
	}
	ok := true
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		sh.sleepUntil = int64(until)
		if b := sh.w.q.peek(); b != nil && time.Duration(tm.nanos(b.key)) < until {
			ok = false
		}
		sh.mu.Unlock()
	}
	return until, ok
}

// drive is the auto-advance goroutine.
func (tm *Timer) drive() {
	defer close(tm.driverDone)
	tm.driverID.Store(goid.ID())
	for {
		select {
		case <-tm.done:
			return
		default:
		}
		tm.advanceClock(nil, math.MaxInt64)
	}
}

// advance flushes every bucket due at or before now (ns) and reports whether
// there was one. Due tasks go to the executor, or run on this goroutine, with
// no lock of the timer's held. The shards take turns a chunk at a time, due
// tasks first: every shard's due tasks are handed over before any shard
// cascades, so one shard's long cascade never holds back another's due
// tasks. With refresh, the clock is read again after each round, so that a
// bucket falling due during a long cascade is served before the rest of the
// cascade; without it (the manual clock) time stands still, and it steps
// from one earliest expiry to the next (see ManualClock.Advance), so tasks
// run in tick order.
//
// It gives up, reporting false, if stop is closed or the timer closes while
// it waits for another advance to finish.
func (tm *Timer) advance(now time.Duration, refresh bool, stop <-chan struct{}) bool {
	nowT := tm.tickDiv.floor(int64(now))
	if !tm.advanceMu.lock(stop, tm.done) {
		return false
	}
	defer tm.advanceMu.unlock()
	defer tm.inlineID.Store(0) // before the unlock: set by dispatch, only while held
	processed := false
	var batch []*Task // due tasks of every shard, handed over once a round
	for {
		busy := false
		for _, cascade := range [2]bool{false, true} {
			for i := range tm.shards {
				p, b := tm.step(&tm.shards[i], nowT, cascade, &batch)
				processed = processed || p
				busy = busy || b
			}
			if busy {
				break // due tasks appeared or remain: serve them before cascading
			}
		}
		// Hand over what is due at the end of every round, not when the
		// whole advance ends: a cascade can keep it going for milliseconds.
		if len(batch) > 0 {
			tm.dispatch(batch)
			batch = nil
			if tm.exec != nil {
				// The worker just readied sits in this P's runnext slot,
				// and the runtime may leave it there (seen: 4-6ms, with
				// the other P idle) while this goroutine keeps cascading.
				// Let it run.
				runtime.Gosched()
			}
		}
		if !busy {
			break
		}
		if refresh {
			nowT = tm.tickDiv.floor(int64(tm.clock.Now()))
		}
	}
	if invariants {
		for i := range tm.shards {
			sh := &tm.shards[i]
			sh.mu.Lock()
			tm.verifyLocked(sh)
			sh.mu.Unlock()
		}
	}
	return processed
}

// step takes sh's buckets due by nowT, then does one chunk of work: due
// tasks, or with cascade and none due, the finest level's cascade. Due
// tasks go to *batch, which is handed over when full. It reports whether it
// took a bucket, and whether it found work.
//
// REQUIRES: tm.advanceMu held.
func (tm *Timer) step(sh *shard, nowT int64, cascade bool, batch *[]*Task) (took, busy bool) {
	sh.mu.Lock()
	// Take every bucket due, in key order. Every bucket before it has been
	// taken, so the wheel can stand at its key.
	for b := sh.w.q.peek(); b != nil && b.key <= nowT; b = sh.w.q.peek() {
		sh.w.q.pop()
		took = true
		tm.flushed.Add(1)
		sh.w.advanceTo(max(sh.w.cur, b.key))
		switch {
		case b.lv.lead == 0: // level 0: every task is due now
			b.moveAllTo(&sh.firing)
			b.reset()
		case b.key < b.expiry: // a crowded bucket's early flush
			b.moveAllTo(&b.lv.cascade)
			// What the finer ring cannot hold yet comes back, and queues
			// the bucket again for its expiry (see place).
			b.key, b.count = b.expiry, 0
		default:
			b.moveAllTo(&b.lv.cascade)
			b.reset()
		}
	}

	// Then a chunk of work, most urgent first: due tasks, then the finest
	// level's cascade. Tasks not yet taken stay cancellable while the lock
	// is released between chunks: they are still linked.
	root := &sh.firing
	for i := 1; cascade && root.next == root && i < len(sh.w.levels); i++ {
		root = &sh.w.levels[i].cascade
	}
	if root.next == root {
		if nowT > sh.w.cur && sh.idleLocked() {
			// Nothing queued is due by nowT (taken above) and nothing is
			// left to hand over or cascade, so no slot is reused early:
			// catch the wheel up to the clock, under the same lock, before
			// a Schedule can place a task between its time and nowT.
			sh.w.advanceTo(nowT)
		}
		sh.mu.Unlock()
		return took, took
	}
	for n := 0; n < flushChunk && root.next != root; n++ {
		t := root.next
		unlink(t)
		if root != &sh.firing {
			if T := tm.tickDiv.ceil(t.due); T > sh.w.cur {
				sh.w.place(t, T) // the advancer is awake: no wake-up needed
				continue
			}
		}
		tm.goneLocked(sh)
		if *batch == nil {
			*batch = tm.newBatch()
		}
		if *batch = append(*batch, t); len(*batch) == batchCap {
			sh.mu.Unlock() // tasks run with no lock of the timer's held
			tm.dispatch(*batch)
			*batch = nil
			sh.mu.Lock()
		}
	}
	sh.mu.Unlock()
	return took, true
}

// nextExpiry returns when the earliest bucket of any shard is due, if there
// is one.
func (tm *Timer) nextExpiry() (time.Duration, bool) {
	at, ok := time.Duration(math.MaxInt64), false
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		if b := sh.w.q.peek(); b != nil {
			at, ok = min(at, time.Duration(tm.nanos(b.key))), true
		}
		sh.mu.Unlock()
	}
	return at, ok
}

// nanos converts a tick to nanoseconds, saturating.
func (tm *Timer) nanos(tick int64) int64 {
	if tick > math.MaxInt64/tm.tick {
		return math.MaxInt64
	}
	return tick * tm.tick
}

// advanceLock is a mutex made of a channel of capacity one: its lock can be
// abandoned.
type advanceLock chan struct{}

// lock takes the lock and reports true, or reports false as soon as stop or
// done is closed (either may be nil) while it waits.
func (l advanceLock) lock(stop, done <-chan struct{}) bool {
	select {
	case l <- struct{}{}:
		return true
	default:
	}
	select {
	case l <- struct{}{}:
		return true
	case <-stop:
		return false
	case <-done:
		return false
	}
}

func (l advanceLock) unlock() { <-l }
