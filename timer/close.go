package timer

import (
	"slices"

	"github.com/gopurgatory/purgatory/internal/goid"
)

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
		tm.advanceMu.lock(nil, nil)
	}
	var pending []*Task
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		pending = sh.drainLocked(pending)
		sh.mu.Unlock()
	}
	if !inline {
		tm.advanceMu.unlock()
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
