package operation

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// State is the library's part of an operation; embed it. Its zero value is
// ready to use, and it costs one allocation with the operation and none
// afterwards: the deadline is an intrusive timer task, and the watcher lists
// hold a pointer to the State.
type State struct {
	task timer.Task   // the deadline; runs (*expirer)(s)
	tm   *timer.Timer // the timer task is scheduled on; set by bind
	op   Operation    // the operation embedding s; set by bind
	obs  Observer     // told about the completion; set by bind
	lock *sync.Mutex  // the lock given to ShareLock; nil: mu
	mu   sync.Mutex
	word atomic.Uint32 // outcome (low bits) | flags below
}

const (
	outcomeMask   = 0x7
	started       = 1 << 3 // set by bind, which publishes the fields it set
	cancelledFlag = 1 << 4
	scheduledFlag = 1 << 5 // on the timer while pending; cleared by Cancel
)

// ShareLock makes the operation use mu as its lock, shared with other
// operations (Kafka does this for a consumer group's operations, so that
// completing one and checking another see one consistent group). Call it
// before submitting the operation.
func (s *State) ShareLock(mu *sync.Mutex) {
	if s.word.Load()&started != 0 {
		panic("operation: ShareLock after the operation was submitted")
	}
	s.lock = mu
}

// Mutex returns the lock TryComplete runs under: the operation's own, or the
// one given to ShareLock. Hold it when changing what TryComplete reads.
func (s *State) Mutex() *sync.Mutex {
	if s.lock == nil {
		return &s.mu
	}
	return s.lock
}

// bind sets the fields a submission gives the operation and publishes them
// with the started flag, in one compare-and-swap. It fails with
// ErrSubmitted if the operation was started before.
//
// REQUIRES: s.Mutex() held. The lock orders two submissions of the same
// operation, so that the loser leaves the fields alone; nothing else writes
// the word before started is set (ForceComplete, Cancel and the completers
// all need it), but a compare-and-swap costs what a store does here.
func (s *State) bind(op Operation, tm *timer.Timer, obs Observer) error {
	w := s.word.Load()
	if w&started != 0 {
		return ErrSubmitted
	}
	s.op, s.tm, s.obs = op, tm, obs
	s.task.Init((*expirer)(s))
	if !s.word.CompareAndSwap(w, w|started) {
		panic("operation: completion word changed before the operation was started")
	}
	return nil
}

// IsCompleted reports whether the operation has completed. A completed
// operation stays completed.
func (s *State) IsCompleted() bool { return s.word.Load()&outcomeMask != 0 }

// Outcome says why the operation completed, or Pending.
func (s *State) Outcome() Outcome { return Outcome(s.word.Load() & outcomeMask) }

// ForceComplete completes the operation from outside, for example when its
// client disconnected or its partition was deleted: it is taken off its
// timer and OnComplete runs, on the calling goroutine, before ForceComplete
// returns. It reports whether this call completed it; false means it had
// completed already (or was never submitted), and OnComplete ran or runs
// elsewhere, once. The outcome is Forced, or Cancelled after CancelForKey.
// Before the operation's submission has finished (TryCompleteElseWatch is
// still running on another goroutine) ForceComplete does nothing and returns
// false: order the two if both can happen.
func (s *State) ForceComplete() bool {
	if s.word.Load()&started == 0 {
		return false
	}
	return s.completeAndFinish(Forced)
}

// complete marks the operation completed with o, by compare-and-swap, and
// reports whether this call did: the one that does runs the callbacks.
func (s *State) complete(o Outcome) (Outcome, bool) {
	for {
		w := s.word.Load()
		if w&outcomeMask != 0 {
			return Pending, false
		}
		if o == Forced && w&cancelledFlag != 0 {
			o = Cancelled
		}
		if s.word.CompareAndSwap(w, w|uint32(o)) {
			return o, true
		}
	}
}

func (s *State) completeAndFinish(o Outcome) bool {
	o, ok := s.complete(o)
	if ok {
		s.finish(o)
	}
	return ok
}

// finish runs the callbacks of an operation this goroutine completed, with
// no lock held.
func (s *State) finish(o Outcome) {
	var late time.Duration
	if o == Expired {
		late = max(0, s.tm.Now()-s.task.Deadline())
	} else {
		s.tm.Cancel(&s.task) // O(1); the task leaves the wheel at once
	}
	s.call("OnComplete", s.op.OnComplete)
	if o == Expired {
		s.call("OnExpiration", s.op.OnExpiration)
	}
	if s.obs != nil {
		s.obs.Completed(s.op, o, late)
	}
}

// call runs a callback, recovering and reporting its panic.
func (s *State) call(name string, f func()) {
	defer func() {
		if v := recover(); v != nil && s.obs != nil {
			s.obs.Panicked(s.op, name, v)
		}
	}()
	f()
}

// try runs TryComplete, treating a panic as "not yet" so that the lock held
// around it is released.
//
// REQUIRES: s.Mutex() held.
func (s *State) try() (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if s.obs != nil {
				s.obs.Panicked(s.op, "TryComplete", v)
			}
		}
	}()
	return s.op.TryComplete()
}

// expirer is the State seen as the timer task's Runner: a conversion, not an
// allocation, and it keeps Run off the user's method set.
type expirer State

func (e *expirer) Run() { (*State)(e).completeAndFinish(Expired) }

// OperationState returns s, so that a type embedding State satisfies
// Operation's OperationState.
func (s *State) OperationState() *State { return s }
