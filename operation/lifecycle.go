package operation

import (
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// The functions below are the steps a purgatory takes an operation through.
// They are functions rather than methods of State so that they stay off the
// method set of the operations that embed it; applications call the
// purgatory, not these.

// Start binds op to the timer its deadline goes on and to the observer told
// of its completion, under op's lock. It fails with ErrSubmitted if op was
// started before. Submit does this and the first tries in one hold
// of the lock; Start is for callers that watch op themselves.
func Start(op Operation, tm *timer.Timer, obs Observer) (*State, error) {
	s := op.OperationState()
	lock := s.Mutex()
	lock.Lock()
	err := s.bind(op, tm, obs)
	lock.Unlock()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Submit starts op as Start does, then runs Kafka's safeTryCompleteOrElse,
// the race-free opening, all under one hold of op's lock: it tries to
// complete op; if it cannot, it calls watch, which registers op under its
// keys, and tries once more. An event on a key between the first try and
// the watch is seen by the second try, and one after the watch finds the
// operation watched, so no wake-up is lost. Holding the lock across the
// watch keeps a concurrent TryCompleteWatched from completing it halfway.
// It reports whether op completed here; OnComplete has then run, after the
// lock was released. It fails with ErrSubmitted, op untouched, if op was
// started before.
func Submit(op Operation, tm *timer.Timer, obs Observer, watch func(*State)) (s *State, done bool, err error) {
	s = op.OperationState()
	lock := s.Mutex()
	lock.Lock()
	if err := s.bind(op, tm, obs); err != nil {
		lock.Unlock()
		return nil, false, err
	}
	o := Pending
	if s.try() {
		o, done = s.complete(Completed)
	} else {
		watch(s)
		if !s.IsCompleted() && s.try() {
			o, done = s.complete(Completed)
		}
	}
	lock.Unlock()
	if done {
		s.finish(o)
	}
	return s, done, nil
}

// TryCompleteWatched is Kafka's safeTryComplete, for an operation found on a
// watcher list: if it has not completed, it tries under its lock, and
// completes it if it can. It reports whether this call completed it.
func TryCompleteWatched(s *State) bool {
	if s.IsCompleted() {
		return false
	}
	lock := s.Mutex()
	lock.Lock()
	o, done := Pending, false
	if !s.IsCompleted() && s.try() {
		o, done = s.complete(Completed)
	}
	lock.Unlock()
	if done {
		s.finish(o)
	}
	return done
}

// Schedule puts the operation's deadline on its timer, timeout from now, and
// reports whether it marked the operation scheduled: it does unless the
// operation completed first. A scheduled operation is seen so by
// WasScheduled when it completes, which lets a purgatory count the
// operations waiting exactly. If the operation completed meanwhile (an event
// raced the submission), the deadline is taken off again, as in Kafka. The
// error is the timer's (ErrClosed, ErrFull); the operation stays marked.
//
// Without mark the operation is not marked (WasScheduled stays false), which
// spares an atomic update when nothing needs the mark: a purgatory with its
// own timer asks the timer how many wait.
func Schedule(s *State, timeout time.Duration, mark bool) (bool, error) {
	if !mark {
		if s.IsCompleted() {
			return false, nil
		}
	} else {
		for {
			w := s.word.Load()
			if w&outcomeMask != 0 {
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
	if s.IsCompleted() {
		s.tm.Cancel(&s.task)
	}
	return mark, nil
}

// WasScheduled reports whether s is marked scheduled: Schedule marked it and
// Cancel did not unmark it.
func WasScheduled(s *State) bool { return s.word.Load()&scheduledFlag != 0 }

// Of returns the operation s belongs to, once started.
func Of(s *State) Operation { return s.op }

// Cancel takes a pending operation off its timer without completing it, and
// marks it so that the ForceComplete that answers it later completes it as
// Cancelled: this is Kafka's cancel, for CancelForKey. It reports whether the
// operation was pending, and whether it was marked scheduled (the mark is
// cleared: the operation no longer waits for its deadline).
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
	s.tm.Cancel(&s.task)
	return true, wasScheduled
}

// CompleteClosed completes a pending operation because its purgatory is
// closing: OnComplete runs, OnExpiration does not. It reports whether this
// call completed it.
func CompleteClosed(s *State) bool { return s.completeAndFinish(Closed) }

// IsPending reports whether s was started and has not completed. Watcher
// lists use it to tell live entries from ones to purge.
func IsPending(s *State) bool { return s.word.Load()&outcomeMask == 0 }
