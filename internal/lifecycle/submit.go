package lifecycle

import (
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// Submit binds the operation cb, whose State is s, to the timer its
// deadline goes on (nil: it has none) and to the observer told of its
// completion, and runs Kafka's safeTryCompleteOrElse, all under one hold of
// its lock: it tries to complete it; if it cannot, it calls watch, which
// lists it under its keys (keys entries, each of which watch must add), and
// tries once more. An event on a key between the first try and the watch
// is seen by the second try, and one after the watch finds the operation
// listed, so no wake-up is lost; holding the lock across the watch keeps a
// concurrent TryWatched from completing it halfway.
//
// It reports whether the operation completed here; its callbacks have then
// run, after the lock was released. It fails with ErrSubmitted, s
// untouched, if the operation was submitted before.
func Submit(s *State, cb Callbacks, tm *timer.Timer, obs Observer, keys int, watch func(*State)) (done bool, err error) {
	lock := s.Mutex()
	lock.Lock()
	w := s.word.Load()
	if w&started != 0 {
		lock.Unlock()
		return false, ErrSubmitted
	}
	// Not yet published: nothing reads these fields before started is set
	// (ForceComplete and the lists need it), and the lock orders two
	// submissions of one operation, so that the loser leaves them alone.
	s.cb, s.tm, s.obs = cb, tm, obs
	s.task.Init((*expirer)(s))
	if s.try() {
		// Completed before anyone could see it: nothing is listed.
		if !s.word.CompareAndSwap(w, w|started|uint64(Completed)) {
			panic("operation: completion word changed before the operation was started")
		}
		lock.Unlock()
		s.finish(Completed, 0, false)
		return true, nil
	}
	// Publish the fields with started, and the entries watch is about to
	// add: a completion from now on counts them, even those not added yet.
	if !s.word.CompareAndSwap(w, w|started|uint64(keys)<<listedShift) {
		panic("operation: completion word changed before the operation was started")
	}
	watch(s)
	o, listed := Pending, 0
	if IsPending(s) && s.try() {
		o, listed, done = s.complete(Completed)
	}
	lock.Unlock()
	if done {
		s.finish(o, listed, false)
	}
	return done, nil
}

// TryWatched is Kafka's safeTryComplete, for an operation found in a watch
// list: if it has not completed, it tries under its lock, and completes it
// if it can, running its callbacks after the lock is released. It reports
// whether this call completed it.
func TryWatched(s *State) bool {
	if !IsPending(s) {
		return false
	}
	lock := s.Mutex()
	lock.Lock()
	o, listed, done := Pending, 0, false
	if IsPending(s) && s.try() {
		o, listed, done = s.complete(Completed)
	}
	lock.Unlock()
	if done {
		s.finish(o, listed, false)
	}
	return done
}

// Schedule puts the operation's deadline on its timer, timeout from now,
// and reports whether it marked the operation scheduled (with mark: a
// purgatory on a shared timer counts what it marks). An operation that
// completed or was cancelled first is not scheduled: a submission racing
// CancelForKey leaves nothing on the timer, so an operation CancelForKey
// handed to its caller never expires behind the caller's back. The race is
// closed on both sides: Schedule checks after placing the task, Cancel
// takes it off after marking. The error is the timer's (ErrClosed,
// ErrFull); the operation stays marked.
func Schedule(s *State, timeout time.Duration, mark bool) (bool, error) {
	if !mark {
		if s.word.Load()&(outcomeMask|cancelledFlag) != 0 {
			return false, nil
		}
	} else {
		for {
			w := s.word.Load()
			if w&(outcomeMask|cancelledFlag) != 0 {
				return false, nil
			}
			if s.word.CompareAndSwap(w, w|scheduledFlag) {
				break
			}
		}
	}
	if err := s.tm.Schedule(&s.task, timeout); err != nil {
		return mark, err
	}
	if s.word.Load()&(outcomeMask|cancelledFlag) != 0 {
		s.tm.Cancel(&s.task)
	}
	return mark, nil
}

// WasScheduled reports whether s is marked scheduled: Schedule marked it
// and Cancel did not unmark it.
func WasScheduled(s *State) bool { return s.word.Load()&scheduledFlag != 0 }

// Unlist counts one watch entry of s out of its lists, for a list that
// drops the entry of a pending operation (CancelForKey). It reports false
// if s completed first: the completion then counted the entry as garbage,
// and the caller drops it as such.
//
// REQUIRES: the lock of the list's shard held.
func Unlist(s *State) bool {
	for {
		w := s.word.Load()
		if w&outcomeMask != 0 {
			return false
		}
		if s.word.CompareAndSwap(w, w-listedOne) {
			return true
		}
	}
}

// Cancel takes a pending operation off its timer without completing it, and
// marks it so that the ForceComplete that answers it later completes it as
// Cancelled: this is Kafka's cancel, for CancelForKey. It reports whether
// the operation was pending, and whether it was marked scheduled (the mark
// is cleared: it no longer waits for its deadline).
func Cancel(s *State) (pending, wasScheduled bool) {
	for {
		w := s.word.Load()
		if w&outcomeMask != 0 {
			return false, false
		}
		if s.word.CompareAndSwap(w, (w|cancelledFlag)&^scheduledFlag) {
			wasScheduled = w&scheduledFlag != 0
			break
		}
	}
	if s.tm != nil {
		s.tm.Cancel(&s.task)
	}
	return true, wasScheduled
}

// lookup finds the State inside an operation's public State; package
// operation, the only one that sees inside it, sets it once.
var lookup func(public any) *State

// SetLookup is called by package operation's init.
func SetLookup(f func(public any) *State) { lookup = f }

// Lookup returns the State inside public, an operation's *operation.State.
func Lookup(public any) *State { return lookup(public) }
