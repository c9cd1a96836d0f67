package timer

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Timer is a hierarchical timing wheel. Schedule and Cancel are O(1) (O(levels)
// when a deadline is far enough to need a coarse level) and allocate nothing;
// the clock sleeps until the earliest bucket is due and never ticks when idle.
// See the package documentation for the algorithm and its lock order.
type Timer struct {
	// Immutable after New.
	tick       int64 // nanoseconds per tick
	tickDiv    divider
	clock      Clock
	manual     *ManualClock // clock, when it is manual
	log        *zap.Logger  // reports recovered panics; nil: to standard error (package panics)
	maxPending int64
	exec       *executor // nil: tasks run on the goroutine that advances

	// shards are the wheels, each with its lock; shardShift picks one from
	// a task's hash (64: there is one).
	shards     []shard
	shardShift uint

	// advanceMu serialises advancing, so that one bucket is flushed at a time
	// and the wheels' time only moves forward. It is never held while waiting.
	// It is a channel, so that an AdvanceClock told to stop gives up waiting
	// for it: a task run inside ManualClock.Advance (which holds it) may stop
	// the reaper that waits for it, and wait for that reaper to exit.
	// Lock order: advanceMu, then one shard's mu, then executor.mu.
	advanceMu advanceLock
	spare     []*Task // an empty batch, without workers; guarded by advanceMu

	// total counts the pending tasks of all shards, only when maxPending
	// caps them: without a cap no counter is shared between the shards.
	total atomic.Int64

	closed atomic.Bool   // set once by Close; Schedule reads it under its shard's mu
	wake   chan struct{} // capacity 1: a deadline earlier than sleepUntil appeared
	done   chan struct{} // closed by Close

	driverDone chan struct{} // closed when the auto-advance goroutine exits; nil without one

	// driverID and inlineID are goroutine ids that Close must not wait for
	// when it is called from a task: the auto-advance goroutine's, written
	// once when it starts, and, without workers, the id of the goroutine
	// running due tasks inline while it holds advanceMu (0 otherwise).
	driverID, inlineID atomic.Uint64

	fired, panics, wakeups, flushed atomic.Int64
}

// New returns a Timer configured by opts. With the defaults it ticks every
// millisecond, has 20 buckets a level, runs expired tasks on GOMAXPROCS
// goroutines and advances its own clock on one more.
func New(opts ...Option) (*Timer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tm := &Timer{
		tick:       int64(cfg.tick),
		tickDiv:    newDivider(uint64(cfg.tick)),
		clock:      cfg.clock,
		log:        cfg.logger,
		maxPending: cfg.maxPending,
		shards:     make([]shard, cfg.shards),
		shardShift: uint(64 - bits.Len(uint(cfg.shards-1))),
		advanceMu:  make(advanceLock, 1),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	start := tm.tickDiv.floor(int64(cfg.clock.Now()))
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.sleepUntil = math.MaxInt64
		initRoot(&sh.firing)
		sh.w.init(cfg.size, start)
	}
	if cfg.workers > 0 {
		tm.exec = newExecutor(cfg.workers, tm.runBatch)
	}
	if m, ok := cfg.clock.(*ManualClock); ok {
		tm.manual = m
		m.attach(tm)
	}
	if cfg.autoAdvance == 1 {
		tm.driverDone = make(chan struct{})
		go tm.drive()
	}
	return tm, nil
}

// Now returns the timer's clock reading; ScheduleAt deadlines are on this
// scale.
func (tm *Timer) Now() time.Duration { return tm.clock.Now() }

// Tick returns the timer's tick (WithTick; DefaultTick unless set): its
// granularity. A task due at d runs once the clock reaches the first
// multiple of Tick at or after d, never before. Callers that group
// deadlines to share one task (a lease table, acquisition locks) group
// them by this tick, so that sharing a task delays none of them.
func (tm *Timer) Tick() time.Duration { return time.Duration(tm.tick) }

// Schedule makes t run once d has elapsed. A task already due (d <= 0) runs at
// once: on a worker, or before Schedule returns when the timer has none. It
// fails with ErrScheduled if t is pending, ErrFull past the WithMaxPending cap
// and ErrClosed after Close. O(1), no allocation.
func (tm *Timer) Schedule(t *Task, d time.Duration) error {
	now := tm.clock.Now()
	_, err := tm.schedule(t, satAdd(now, d), now, false)
	return err
}

// ScheduleAt makes t run at deadline, a reading of the timer's clock (see
// Now). It is Schedule with an absolute deadline, for fixed-rate schedules.
func (tm *Timer) ScheduleAt(t *Task, deadline time.Duration) error {
	_, err := tm.schedule(t, deadline, tm.clock.Now(), false)
	return err
}

// Reschedule moves t to run once d has elapsed, whether or not it is pending,
// in one step: there is no moment at which it is neither pending nor due. It
// reports whether t was pending, like time.Timer.Reset. O(1).
func (tm *Timer) Reschedule(t *Task, d time.Duration) (bool, error) {
	now := tm.clock.Now()
	return tm.schedule(t, satAdd(now, d), now, true)
}

// AfterFunc runs f once d has elapsed and returns its task, for Cancel. It
// allocates the task; embed a Task and use Schedule to avoid that.
func (tm *Timer) AfterFunc(d time.Duration, f func()) (*Task, error) {
	t := NewTask(Func(f))
	return t, tm.Schedule(t, d)
}

// schedule links t to run at due (ns on the clock), given the clock read now.
// With move it first unlinks t if it is pending here.
func (tm *Timer) schedule(t *Task, due, now time.Duration, move bool) (wasPending bool, err error) {
	if t.r == nil {
		panic("timer: task has no Runner; call Init or use NewTask")
	}
	sh := tm.shardOf(t)
	sh.mu.Lock()
	// Read under sh.mu: Close sets closed before it drains sh under sh.mu,
	// so a task placed here is either drained or refused.
	if tm.closed.Load() {
		sh.mu.Unlock()
		return false, ErrClosed
	}
	if t.next != nil {
		if !move || t.tm != tm {
			sh.mu.Unlock()
			return true, ErrScheduled
		}
		unlink(t) // it keeps its place under the cap, if any
		sh.pending--
		wasPending = true
	}
	t.tm = tm
	t.due = int64(due)
	T := tm.tickDiv.ceil(int64(due))
	// The wheel may have moved past T since now was read (an advance ran in
	// between); such a task is due, and running it now is not early.
	if due <= now || T <= sh.w.cur {
		if wasPending && tm.maxPending > 0 {
			tm.total.Add(-1)
		}
		tm.fired.Add(1)
		if tm.exec != nil {
			b := tm.exec.batch()
			tm.exec.submit(append(b, t)) // under sh.mu, so Close cannot strand it
			sh.mu.Unlock()
			return wasPending, nil
		}
		sh.mu.Unlock()
		tm.runTask(t)
		return wasPending, nil
	}
	if !wasPending && tm.maxPending > 0 && tm.total.Add(1) > tm.maxPending {
		tm.total.Add(-1)
		sh.mu.Unlock()
		return wasPending, fmt.Errorf("%w: %d pending is the cap (WithMaxPending)", ErrFull, tm.maxPending)
	}
	sh.pending++
	if key := sh.w.place(t, T); key != noExpiry && tm.nanos(key) < sh.sleepUntil {
		// A bucket is due earlier than the waiter's wake-up: wake it.
		select {
		case tm.wake <- struct{}{}:
		default:
		}
	}
	sh.mu.Unlock()
	return wasPending, nil
}

// Cancel stops t if it is pending and reports whether it did. When it returns
// false the task was not pending here: it never was, was cancelled already,
// or has expired and runs (or ran) exactly once. Cancel does not wait for a
// running task. O(1); the task's memory is unlinked at once.
func (tm *Timer) Cancel(t *Task) bool {
	sh := tm.shardOf(t)
	sh.mu.Lock()
	if t.next == nil || t.tm != tm {
		sh.mu.Unlock()
		return false
	}
	unlink(t)
	tm.goneLocked(sh)
	sh.mu.Unlock()
	return true
}

// Size returns the number of pending tasks. O(shards).
func (tm *Timer) Size() int {
	n := int64(0)
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		n += sh.pending
		sh.mu.Unlock()
	}
	return int(n)
}
