package timer

import (
	"github.com/gopurgatory/purgatory/internal/goid"
	"github.com/gopurgatory/purgatory/internal/panics"
)

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
			tm.reportPanic("timer: task", r)
		}
	}()
	t.r.Run()
}

// reportPanic counts a recovered panic and reports it (package panics). It
// must be called in the deferred function that recovered it, for the stack.
func (tm *Timer) reportPanic(where string, v any) {
	tm.panics.Add(1)
	panics.Report(tm.log, where, v)
}
