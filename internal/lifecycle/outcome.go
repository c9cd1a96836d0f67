package lifecycle

import (
	"errors"
	"time"
)

// Outcome says why an operation completed; package operation exports the
// same values as its Outcome.
type Outcome uint32

// The outcomes. They fit the word's three outcome bits.
const (
	Pending     Outcome = iota // not completed yet
	Completed                  // TryComplete reported its condition holds
	Expired                    // its deadline passed
	Forced                     // ForceComplete
	Cancelled                  // ForceComplete after CancelForKey took it off its key
	Closed                     // its purgatory, or its timer, closed
	Rejected                   // it could not wait: the timer was at its cap
	ContextDone                // the context it was submitted with was cancelled
	numOutcomes
)

// NumOutcomes is the number of outcomes, Pending included: the size of an
// array indexed by outcome.
const NumOutcomes = int(numOutcomes)

// ErrSubmitted is returned when an operation that was submitted once is
// submitted again: an operation is answered once, so it is used once.
var ErrSubmitted = errors.New("operation: already submitted")

// Callbacks are the user's side of an operation: package operation's
// Operation without OperationState.
type Callbacks interface {
	TryComplete() bool
	OnComplete()
	OnExpiration()
}

// An Observer is told what becomes of the operations submitted to it (a
// purgatory, for its counts and metrics). Its methods are called with no
// lock held, on the goroutine that completed the operation.
type Observer interface {
	// Completed is called after OnComplete (and OnExpiration) returned or
	// panicked, and before the finished bit is set and Done's channel
	// closed: whoever Done wakes sees what Completed counted. listed is
	// how many watch entries the operation had in lists when it
	// completed: they stay there, garbage, until the lists drop them.
	// late is how long after its deadline an expired operation
	// completed, zero otherwise.
	Completed(s *State, o Outcome, listed int, late time.Duration)
	// Panicked is called when a callback panicked; the panic was recovered.
	Panicked(s *State, callback string, v any)
}
