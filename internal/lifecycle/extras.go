package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// extras is what only some operations use, allocated the first time one of
// them is asked for: a done channel (Done), the context an operation was
// submitted with, and the record of its watch lists when they are emptied
// eagerly.
//
// Their users and the finisher meet as in Dekker's algorithm: the finisher
// sets the word's finished bit (one atomic OR, the only cost an operation
// without extras pays) and then looks for extras; a user makes the extras
// and then looks at the finished bit. Whichever comes second sees the
// other, so an extra made while the callbacks run is not missed, and one
// made after they ran sees that they did.
type extras struct {
	mu       sync.Mutex    // guards the following
	finished bool          // the finisher has been here: the callbacks have run
	done     chan struct{} // closed when finished; made by Done
	stop     func() bool   // unties the context (context.AfterFunc's stop)
	listing  any           // the watch lists' record (package watchlist), eager removal only
}

// closedChan is the done channel of an operation that finished before
// anyone asked for one.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// extras returns s's extras, making them if needed, and reports whether s
// has finished (then they are of no use: nothing will look at them).
func (s *State) extras() (*extras, bool) {
	e := s.ext.Load()
	if e == nil {
		n := &extras{}
		if s.ext.CompareAndSwap(nil, n) {
			e = n
		} else {
			e = s.ext.Load()
		}
	}
	return e, s.word.Load()&finishedFlag != 0
}

// release runs when the callbacks have run and the finisher has set the
// finished bit (State.finish, which writes that part out so that an
// operation without extras pays one OR and one load, not a call): it
// unties the context and closes the done channel.
func (e *extras) release() {
	e.mu.Lock()
	e.finished = true
	stop, done := e.stop, e.done
	e.stop = nil
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	if done != nil {
		close(done)
	}
}

// Done returns a channel closed once the operation has completed and its
// callbacks have run. The first call makes the channel (two allocations).
func (s *State) Done() <-chan struct{} {
	e, finished := s.extras()
	if finished {
		return closedChan
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return closedChan
	}
	if e.done == nil {
		e.done = make(chan struct{})
	}
	return e.done
}

// Wait blocks until the operation has completed and its callbacks have run,
// or ctx is done, and returns ctx's error in that case. An operation done
// already returns nil whatever ctx.
func (s *State) Wait(ctx context.Context) error {
	done := s.Done()
	select {
	case <-done:
		return nil // done wins over a ctx that is done too
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TieContext makes ctx's end complete the submitted operation s: with
// outcome Expired when ctx's deadline passed (the submission made it the
// operation's deadline if it was the earlier), ContextDone when ctx was
// cancelled. The tie is undone when the operation completes, so a
// long-lived ctx keeps nothing of it. Costs context.AfterFunc's
// allocations and the extras'.
func TieContext(ctx context.Context, s *State) {
	if ctx.Done() == nil {
		return // never done
	}
	e, finished := s.extras()
	if finished {
		return
	}
	stop := context.AfterFunc(ctx, func() {
		o := ContextDone
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			o = Expired
		}
		CompleteWith(s, o)
	})
	e.mu.Lock()
	if e.finished {
		e.mu.Unlock()
		stop() // it finished meanwhile: release found nothing to untie
		return
	}
	e.stop = stop
	e.mu.Unlock()
}

// Listing returns the record of s's watch lists, made by mk under the
// extras' lock on first use, and whether s is still unfinished: a finished
// operation is not listed again. f runs under the extras' lock, with the
// record, so that it and the finisher's TakeListing are ordered.
//
// REQUIRES: the lock of the shard the list belongs to held (lock order:
// a shard's lock, then the extras').
func Listing(s *State, mk func() any, f func(listing any)) bool {
	e, finished := s.extras()
	if finished {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return false
	}
	if e.listing == nil {
		e.listing = mk()
	}
	f(e.listing)
	return true
}

// TakeListing returns the record of s's watch lists, for the observer of a
// completed operation to empty them; nil if it was never listed eagerly.
// From then on no list is recorded any more: a watch still to come (its
// submission racing the completion) counts its entry dropped at once. The
// observer runs before the finished bit is set, so TakeListing makes the
// extras if there are none yet, and marks them finished itself.
func TakeListing(s *State) any {
	e, _ := s.extras()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	l := e.listing
	e.listing = nil
	return l
}
