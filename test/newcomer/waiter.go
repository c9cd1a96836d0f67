package newcomer

import (
	"time"

	"github.com/gopurgatory/purgatory/operation"
)

// A Waiter is one parked wait of the long-poll or the counter wait: Done
// is closed once it is answered, and OK then says whether its condition
// held (false: its timeout passed, or its program closed).
type Waiter interface {
	Done() <-chan struct{}
	OK() bool
}

// waitOp is the purgatory's part of a Waiter: the operation's State gives
// Done, and OK reads the outcome.
type waitOp struct{ operation.State }

// OK reports whether the operation completed by its condition.
// REQUIRES: Done closed.
func (w *waitOp) OK() bool { return w.Outcome() == operation.Completed }

// refused is the Waiter of a wait its program refused (it had closed):
// answered already, OK false.
type refused struct{}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (refused) Done() <-chan struct{} { return closedChan }
func (refused) OK() bool              { return false }

// naiveWaiter is the naive programs' Waiter: a channel closed by whichever
// of the event and the timer answers first, under the program's mutex, and
// the timer, stopped when the event wins.
type naiveWaiter struct {
	done  chan struct{}
	timer *time.Timer // guarded by the program's mutex, as ok
	ok    bool
}

func (w *naiveWaiter) Done() <-chan struct{} { return w.done }

// OK reports whether the event answered the waiter.
// REQUIRES: Done closed (the close orders the write of ok before it).
func (w *naiveWaiter) OK() bool { return w.ok }

// answerLocked answers w with ok and stops its timer (a no-op when the
// timer is what answers).
// REQUIRES: the program's mutex held, and w taken off its list.
func (w *naiveWaiter) answerLocked(ok bool) {
	w.ok = ok
	w.timer.Stop()
	close(w.done)
}

// removeWaiter takes w off ws, in O(len(ws)), and reports whether it was
// there: what a naive program does when a waiter's timer fires.
func removeWaiter[W comparable](ws []W, w W) ([]W, bool) {
	for i, x := range ws {
		if x == w {
			last := len(ws) - 1
			ws[i] = ws[last]
			var zero W
			ws[last] = zero // let the waiter go
			return ws[:last], true
		}
	}
	return ws, false
}
