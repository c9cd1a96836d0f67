package lifecycle

import (
	"time"
	"unsafe"
)

// Start binds the operation cb, whose State is s, to b (the timer its
// deadline goes on and the observer told of its completion), and begins
// Kafka's safeTryCompleteOrElse under s's lock: it tries to complete it.
// If that completes it, its callbacks have run, the lock is released and
// Start reports true. Otherwise Start returns false with the lock HELD:
// the caller lists the operation under its keys (keys entries, each of
// which it must add) and then calls Listed, which tries once more and
// releases the lock. An event on a key between the first try
// and the listing is seen by the second try, and one after the listing
// finds the operation listed, so no wake-up is lost; holding the lock across
// the listing keeps a concurrent TryWatched from completing it halfway.
// (Two calls rather than one taking the listing as a func: the purgatory's
// hot path then builds no closure and makes no indirect call.)
//
// It fails with ErrSubmitted, s untouched and the lock released, if the
// operation was submitted before.
func Start(s *State, cb Callbacks, b *Binding, keys int) (done bool, err error) {
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
	s.cb, s.b = cb, b
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
	// Publish the fields with started, and the entries the caller is about
	// to add: a completion from now on counts them, even those not added
	// yet. The lock is held for Listed's try, which the trying flag says
	// from now on (the listing comes first: a check that finds s listed
	// meanwhile leaves it to that try, see TryWatched).
	if !s.word.CompareAndSwap(w, w|started|tryingFlag|countedFlag|uint64(keys)<<listedShift) {
		panic("operation: completion word changed before the operation was started")
	}
	return false, nil
}

// Listed ends the submission Start began, once the caller has listed s: it
// tries once more, releases s's lock, and reports whether this completed
// s (its callbacks have then run).
//
// REQUIRES: Start returned false and no error; s's lock is held, and the
// trying flag set (Start set it).
func Listed(s *State) bool {
	o, listed, done := s.tryHeld()
	s.Mutex().Unlock()
	if done {
		s.finish(o, listed, false)
	}
	return done
}

// TryWatched is Kafka's safeTryComplete, for an operation found in a watch
// list: if it has not completed, it tries under its lock, and completes it
// if it can, running its callbacks after the lock is released. It reports
// whether this call completed it.
//
// If the lock is taken by a try of this operation (the trying flag), the
// check does not wait for it: it asks that try to run once more (the retry
// flag) and returns. That try may be this goroutine's own: a TryComplete
// that calls CheckAndComplete on its operation's key re-enters here with
// the lock held, and Go's mutex, unlike Kafka's ReentrantLock, would
// deadlock. Otherwise (the lock is held by the operation's owner changing
// what TryComplete reads, by another operation sharing it, or by a
// submission listing it) the check waits for the lock, as Kafka's does.
func TryWatched(s *State) bool {
	if !IsPending(s) {
		return false
	}
	lock := s.Mutex()
	if !lock.TryLock() {
		if !s.waitForLock() {
			return false
		}
		lock.Lock()
	}
	if old := s.word.Or(tryingFlag); old&outcomeMask != 0 {
		lock.Unlock() // completed meanwhile; its trying flag no longer matters
		return false
	}
	o, listed, done := s.tryHeld()
	lock.Unlock()
	if done {
		s.finish(o, listed, false)
	}
	return done
}

// waitForLock decides what a check does when s's lock is taken: it
// reports false, having left s to the try that holds the lock (or having
// found s completed), or true when the check must wait for the lock.
//
// The retry flag is set only while the trying flag is, in one swap, and
// the try clears both in one atomic AND after TryComplete returns (see
// tryHeld): either the swap comes first and the try sees the flag and
// tries again, after the event this check was called for, or the AND
// comes first, the swap fails, and the check waits for the lock.
func (s *State) waitForLock() bool {
	for {
		w := s.word.Load()
		switch {
		case w&outcomeMask != 0:
			return false
		case w&tryingFlag == 0:
			return true
		case w&retryFlag != 0 || s.word.CompareAndSwap(w, w|retryFlag):
			return false
		}
	}
}

// maxRetries bounds the tries one holder of the lock makes in a row because
// checks asked it to: only a TryComplete that calls CheckAndComplete on its
// own keys at every try gets near it (each try asks for the next), where
// other goroutines' checks would have to land during each of a thousand
// tries in a row.
const maxRetries = 1000

// tryHeld runs TryComplete and completes s if it held, as long as checks
// ask for another try (the retry flag), and leaves the trying flag clear
// if s is still pending. It reports what complete reported.
//
// REQUIRES: s's lock held and the trying flag set.
func (s *State) tryHeld() (Outcome, int, bool) {
	for retries := 0; ; retries++ {
		if IsPending(s) && s.try() {
			// The outcome's swap keeps the trying flag: nothing looks at
			// it once the operation has completed.
			if o, listed, ok := s.complete(Completed); ok {
				return o, listed, true
			}
		}
		old := s.word.And(^uint64(tryingFlag | retryFlag))
		if old&retryFlag == 0 || old&outcomeMask != 0 {
			return Pending, 0, false
		}
		if retries == maxRetries {
			s.Mutex().Unlock()
			panic("operation: TryComplete calls CheckAndComplete on a key of its own operation at every try; " +
				"it must report whether the condition holds, and checks belong after the change, outside TryComplete")
		}
		s.word.Or(tryingFlag)
	}
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
	if err := s.b.tm.Schedule(&s.task, timeout); err != nil {
		return mark, err
	}
	if s.word.Load()&(outcomeMask|cancelledFlag) != 0 {
		s.b.tm.Cancel(&s.task)
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
	if tm := s.b.tm; tm != nil {
		tm.Cancel(&s.task)
	}
	return true, wasScheduled
}

// Lookup returns the State inside public, an operation's *operation.State,
// which holds a State and nothing else: the conversion is unsafe.Pointer's
// rule (1) (same size, same layout), which package operation checks at
// compile time. Free, and inlined: the submission path takes it on every
// operation. Only the library's packages call it, and only with that type.
func Lookup[P any](public *P) *State { return (*State)(unsafe.Pointer(public)) }
