package timer

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/internal/goid"
)

// flushChunk is how many tasks a flush moves before it lets schedulers take
// the lock, so that a burst of a million expiries does not stall Schedule.
const flushChunk = 1024

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
	log        *zap.Logger
	maxPending int64
	exec       *executor // nil: tasks run on the goroutine that advances

	// shards are the wheels, each with its lock; shardShift picks one from
	// a task's hash (64: there is one).
	shards     []shard
	shardShift uint

	// advanceMu serialises advancing, so that one bucket is flushed at a time
	// and the wheels' time only moves forward. It is never held while waiting.
	// Lock order: advanceMu, then one shard's mu, then executor.mu.
	advanceMu sync.Mutex
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

// goneLocked counts a task unlinked from sh's wheel for good (cancelled or
// due), in sh and under the cap.
//
// REQUIRES: sh.mu held.
func (tm *Timer) goneLocked(sh *shard) {
	sh.pending--
	if tm.maxPending > 0 {
		tm.total.Add(-1)
	}
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

// AdvanceClock waits at most maxWait for the earliest bucket to expire, then
// flushes every bucket due by the clock's time: tasks due are handed to run,
// the others fall to a finer level. It reports whether any bucket was
// flushed. With nothing due it sleeps until the earliest deadline or maxWait,
// whichever is first; a Schedule that creates an earlier deadline wakes it.
// It returns false at once after Close, and when ctx is done.
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
		if tm.advance(now, true) {
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
			return tm.advance(now, true)
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
func (tm *Timer) advance(now time.Duration, refresh bool) bool {
	nowT := tm.tickDiv.floor(int64(now))
	tm.advanceMu.Lock()
	defer tm.advanceMu.Unlock()
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

// newBatch returns an empty batch: the executor's, or without one the
// advancer's own, which runs before the next is taken.
//
// REQUIRES: tm.advanceMu held.
func (tm *Timer) newBatch() []*Task {
	if tm.exec != nil {
		return tm.exec.batch()
	}
	if b := tm.spare; b != nil {
		tm.spare = nil
		return b
	}
	return make([]*Task, 0, batchCap)
}

// dispatch hands a batch of due tasks over to run: to the workers, or
// without them it runs them here, then keeps the batch for the next.
//
// REQUIRES: tm.advanceMu held, and no shard's lock.
func (tm *Timer) dispatch(b []*Task) {
	tm.fired.Add(int64(len(b)))
	if tm.exec != nil {
		tm.exec.submit(b)
		return
	}
	if tm.inlineID.Load() == 0 {
		// A task run here may close its timer: Close must then know that
		// the advance it would wait for is its own caller's.
		tm.inlineID.Store(goid.ID())
	}
	tm.runBatch(b)
	clear(b)
	tm.spare = b[:0]
}

func (tm *Timer) runBatch(b []*Task) {
	for _, t := range b {
		tm.runTask(t)
	}
}

// runTask runs one task, recovering and logging its panic.
func (tm *Timer) runTask(t *Task) {
	defer func() {
		if r := recover(); r != nil {
			tm.panics.Add(1)
			tm.log.Error("timer: task panicked; the timer goes on",
				zap.Any("panic", r), zap.Stack("stack"))
		}
	}()
	t.r.Run()
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

// Close stops the timer and the goroutines it owns, and returns the tasks
// that were still pending, in deadline order. Those tasks never run (as with
// ScheduledThreadPoolExecutor.shutdownNow): the caller decides what becomes
// of them. Tasks that had already expired run before Close returns. Later
// calls return nil. Schedule after Close fails with ErrClosed.
//
// A task may close its own timer. Close then waits for every goroutine of
// the timer but the one running that task, which exits (or, for an
// advance the task runs inside, returns) as soon as the task does; it does
// not wait for the tasks due in the same advance either, which run after
// it. Close costs a few microseconds more than its work to find out which
// goroutine calls it.
func (tm *Timer) Close() []*Task {
	if !tm.closed.CompareAndSwap(false, true) {
		return nil
	}
	self := goid.ID()

	// 1. Wake the auto-advance goroutine and any AdvanceClock waiter.
	close(tm.done)
	if tm.driverDone != nil && tm.driverID.Load() != self {
		<-tm.driverDone
	}
	if tm.manual != nil {
		tm.manual.detach(tm)
	}
	// 2. Take the pending tasks out, after any flush in flight, unless the
	// flush is this goroutine's own: it is running a task, with no shard's
	// lock held, and its advance finds the shards empty when it goes on.
	inline := tm.inlineID.Load() == self
	if !inline {
		tm.advanceMu.Lock()
	}
	var pending []*Task
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		pending = sh.drainLocked(pending)
		sh.mu.Unlock()
	}
	if !inline {
		tm.advanceMu.Unlock()
	}
	sortByDeadline(pending)
	// 3. Let the workers run what had expired, then stop them.
	if tm.exec != nil {
		tm.exec.close(self)
	}
	return pending
}

// drainLocked unlinks every pending task of sh and appends them to out.
//
// REQUIRES: sh.mu held, and tm.advanceMu held by the caller or by the
// advance the caller runs a task of.
func (sh *shard) drainLocked(out []*Task) []*Task {
	out = slices.Grow(out, int(sh.pending))
	take := func(root *Task) {
		for t := root.next; t != root; t = root.next {
			unlink(t)
			out = append(out, t)
		}
	}
	take(&sh.firing)
	for _, lv := range sh.w.levels {
		take(&lv.cascade)
		for j := range lv.buckets {
			b := &lv.buckets[j]
			take(&b.root)
			b.reset()
		}
	}
	clear(sh.w.q.h)
	sh.w.q.h = sh.w.q.h[:0]
	sh.pending = 0
	return out
}

// sortByDeadline sorts tasks by deadline, keeping the order of equal ones.
func sortByDeadline(out []*Task) {
	slices.SortStableFunc(out, func(a, b *Task) int {
		switch {
		case a.due < b.due:
			return -1
		case a.due > b.due:
			return 1
		}
		return 0
	})
}

// Stats is a snapshot of a Timer's counters.
type Stats struct {
	Pending int64 // tasks waiting in the wheel
	Fired   int64 // tasks handed over to run since New
	Panics  int64 // tasks whose Run panicked (recovered and logged)
	Wakeups int64 // times a waiting AdvanceClock woke up
	Flushed int64 // buckets flushed
	Levels  int   // levels created so far, in the shard with the most
	Shards  int   // wheels the tasks are split over (WithShards)
}

// Stats returns the timer's counters.
func (tm *Timer) Stats() Stats {
	levels, pending := 0, int64(0)
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		levels, pending = max(levels, len(sh.w.levels)), pending+sh.pending
		sh.mu.Unlock()
	}
	return Stats{
		Pending: pending,
		Fired:   tm.fired.Load(),
		Panics:  tm.panics.Load(),
		Wakeups: tm.wakeups.Load(),
		Flushed: tm.flushed.Load(),
		Levels:  levels,
		Shards:  len(tm.shards),
	}
}

// floorDiv and ceilDiv round a / b (b > 0) towards -∞ and +∞ without
// overflowing.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}
