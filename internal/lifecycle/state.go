package lifecycle

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/internal/panics"
	"github.com/gopurgatory/purgatory/timer"
)

// State is the library's part of an operation. Its zero value is ready to
// use; it is embedded (through package operation's State) in the user's
// operation, so it costs no allocation of its own: the deadline is an
// intrusive timer task, and watch lists hold a pointer to the State.
type State struct {
	task timer.Task  // the deadline; runs (*expirer)(s)
	b    *Binding    // its timer and observer, set by Start
	cb   Callbacks   // the user's operation
	lock *sync.Mutex // the lock given to ShareLock; nil: mu

	// ext holds what only some operations use (see extras.go): nil until
	// one of them is asked for.
	ext atomic.Pointer[extras]

	word atomic.Uint64 // the completion word: see the package documentation

	mu sync.Mutex // the operation's own lock, unless ShareLock gave another
}

// The completion word's fields.
const (
	outcomeMask   = 0x7
	started       = 1 << 3
	cancelledFlag = 1 << 4
	scheduledFlag = 1 << 5
	finishedFlag  = 1 << 6 // set by release once the callbacks have run
	tryingFlag    = 1 << 7 // a library try of the operation holds its lock (see tryHeld)
	retryFlag     = 1 << 8 // a check found it trying and left the operation to it
	countedFlag   = 1 << 9 // it waited: counted submitted by the lists, and completed by the observer
	listedShift   = 32
	listedOne     = 1 << listedShift
)

// MaxKeys is the most keys an operation can be watched under: the word's
// count of watch entries has 32 bits.
const MaxKeys = 1<<32 - 1

// ShareLock makes the operation use mu as its lock. It panics once the
// operation was submitted: its lock is in use from then on.
func (s *State) ShareLock(mu *sync.Mutex) {
	if s.word.Load()&started != 0 {
		panic("operation: ShareLock after the operation was submitted")
	}
	s.lock = mu
}

// Mutex returns the lock TryComplete runs under.
func (s *State) Mutex() *sync.Mutex {
	if s.lock == nil {
		return &s.mu
	}
	return s.lock
}

// IsCompleted reports whether the operation has completed.
func (s *State) IsCompleted() bool { return s.word.Load()&outcomeMask != 0 }

// Outcome says why the operation completed, or Pending.
func (s *State) Outcome() Outcome { return Outcome(s.word.Load() & outcomeMask) }

// IsPending reports whether s has not completed. Watch lists use it to tell
// live entries from garbage: they only hold started operations.
func IsPending(s *State) bool { return s.word.Load()&outcomeMask == 0 }

// Counted reports whether s went on to be listed after its first try (it
// did not complete at once): its owner counts it pending until it
// completes. Read by the observer of its completion.
func Counted(s *State) bool { return s.word.Load()&countedFlag != 0 }

// Of returns the operation s belongs to, once submitted.
func Of(s *State) Callbacks { return s.cb }

// ForceComplete completes a submitted operation from outside, with outcome
// Forced (Cancelled after CancelForKey), and runs its callbacks on the
// calling goroutine. It reports whether this call completed it; before the
// submission has bound the operation it does nothing and reports false.
func (s *State) ForceComplete() bool {
	if s.word.Load()&started == 0 {
		return false
	}
	return s.completeAndFinish(Forced, false)
}

// CompleteWith completes a submitted, pending operation with o (Closed,
// Rejected, ContextDone, or Expired for a context's deadline), running its
// callbacks on the calling goroutine, and reports whether this call did.
func CompleteWith(s *State, o Outcome) bool {
	if s.word.Load()&started == 0 {
		return false
	}
	return s.completeAndFinish(o, false)
}

// complete marks the operation completed with o, by compare-and-swap, and
// reports whether this call did, and how many watch entries it had then.
// The one call that succeeds runs the callbacks (finish).
//
// An operation CancelForKey took (the cancelled flag) belongs to the caller
// it was handed to, who answers it: it never expires. Cancel unlinks its
// timer task, but the timer may have taken the task off its bucket already
// and run it later, on a worker; the swap sees the flag, so that run, and
// a context's deadline, find nothing to do. Both flags are in the one word,
// so Cancel's swap and this one are ordered: either the expiry completed
// the operation first and Cancel reports it was not pending, or the flag
// is seen here.
func (s *State) complete(o Outcome) (Outcome, int, bool) {
	for {
		w := s.word.Load()
		if w&outcomeMask != 0 {
			return Pending, 0, false
		}
		if w&cancelledFlag != 0 {
			switch o {
			case Expired:
				return Pending, 0, false
			case Forced:
				o = Cancelled
			}
		}
		if s.word.CompareAndSwap(w, w|uint64(o)) {
			return o, int(w >> listedShift), true
		}
	}
}

func (s *State) completeAndFinish(o Outcome, byTimer bool) bool {
	o, listed, ok := s.complete(o)
	if ok {
		s.finish(o, listed, byTimer)
	}
	return ok
}

// finish runs the callbacks of an operation this goroutine completed, with
// no lock held, then releases what the operation holds and tells the
// observer. byTimer: its timer task is running it, so it is off the timer.
func (s *State) finish(o Outcome, listed int, byTimer bool) {
	var late time.Duration
	b := s.b
	if b.tm != nil {
		if o == Expired {
			late = max(0, b.tm.Now()-s.task.Deadline())
		}
		if !byTimer {
			b.tm.Cancel(&s.task) // O(1); the task leaves the wheel at once
		}
	}
	s.onComplete()
	if o == Expired {
		s.onExpiration()
	}
	// The observer first, so that whoever Done wakes finds the operation
	// counted (Pending, the metrics) as answered.
	if b.obs != nil {
		b.obs.Completed(s, o, listed, late)
	}
	// Publish that the callbacks ran (see extras): written out here, as a
	// method it would not be inlined.
	s.word.Or(finishedFlag)
	if e := s.ext.Load(); e != nil {
		e.release()
	} // else an extra made from now on sees the finished bit
}

// onComplete and onExpiration run a callback, recovering and reporting its
// panic. The deferred call is a method, not a closure, and the callback is
// called directly, not through a method value: every operation runs this,
// and each of those costs instructions on it.
func (s *State) onComplete() {
	defer s.recovered("OnComplete")
	s.cb.OnComplete()
}

func (s *State) onExpiration() {
	defer s.recovered("OnExpiration")
	s.cb.OnExpiration()
}

// recovered recovers the panic of the callback it was deferred for, and
// reports it. It must be called by defer directly, for recover to work.
func (s *State) recovered(callback string) {
	if v := recover(); v != nil {
		s.panicked(callback, v)
	}
}

// panicked reports a recovered panic to the observer; without one (package
// watchers alone) it writes it to standard error, so that it is never
// silent. It runs in the deferred function that recovered the panic, so
// that the stack is the panic's.
func (s *State) panicked(callback string, v any) {
	if s.b.obs != nil {
		s.b.obs.Panicked(s, callback, v)
		return
	}
	panics.Report(nil, "operation: "+callback, v)
}

// try runs TryComplete. A panic counts as "not yet": recovered, it leaves ok
// false, and the lock held around try is released by its caller as usual.
// (A closure here costs fewer instructions than deferring recovered, which
// the compiler wraps in a closure of its own.)
//
// REQUIRES: s.Mutex() held.
func (s *State) try() (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			s.panicked("TryComplete", v)
		}
	}()
	return s.cb.TryComplete()
}

// expirer is the State seen as its timer task's Runner: a conversion, not an
// allocation, and it keeps Run off the operation's method set.
type expirer State

func (e *expirer) Run() { (*State)(e).completeAndFinish(Expired, true) }

// A Binding is what Start binds an operation to: the timer its deadline
// goes on (nil: it never has one, as under package watchers alone) and the
// observer told of its completion (nil: none). A purgatory makes one and
// binds all its operations to it, so that an operation holds one pointer
// for both, not three words: sixteen bytes less in every operation, which
// the user allocates.
type Binding struct {
	tm  *timer.Timer
	obs Observer
}

// NewBinding returns a Binding of tm and obs, either of which may be nil.
func NewBinding(tm *timer.Timer, obs Observer) *Binding { return &Binding{tm: tm, obs: obs} }
