package operation

import "time"

// An Operation is a request that cannot be answered yet: a long-poll fetch,
// an acks=all produce, a group join. Implement the three callbacks and embed a
// State, which supplies OperationState:
//
//	type delayedFetch struct {
//		operation.State
//		// the partitions, min bytes, the callback that writes the response...
//	}
//
// An Operation is submitted once, to one purgatory.
type Operation interface {
	// TryComplete reports whether the operation's condition holds now (the
	// data it waits for has arrived, say). It is called with the
	// operation's lock held, by whichever goroutine submits the operation
	// or checks one of its keys, so it must be quick and must not block; it
	// is not called once the operation has completed. It only reports: the
	// library completes the operation and then calls OnComplete.
	TryComplete() bool

	// OnComplete answers the operation. It runs exactly once for every
	// operation, whatever completed it (its condition, its deadline, a
	// ForceComplete, a closing purgatory; see State.Outcome), with no lock
	// of the library held, not even the operation's own: it may call back
	// into any purgatory.
	OnComplete()

	// OnExpiration runs after OnComplete, only for an operation that
	// completed because its deadline passed, as in Kafka (where it records
	// expiration metrics).
	OnExpiration()

	// OperationState returns the embedded State.
	OperationState() *State
}

// Outcome says why an operation completed.
type Outcome uint32

// The outcomes, in the order the metrics list them.
const (
	Pending   Outcome = iota // not completed yet
	Completed                // TryComplete reported its condition holds
	Expired                  // its deadline passed
	Forced                   // ForceComplete, from outside the purgatory
	Cancelled                // ForceComplete after its key was cancelled (CancelForKey)
	Closed                   // its purgatory closed while it waited
)

var outcomeNames = [...]string{"pending", "completed", "expired", "forced", "cancelled", "closed"}

// String returns the outcome's name, as used in metric labels.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Outcomes lists every outcome an operation can complete with.
func Outcomes() []Outcome { return []Outcome{Completed, Expired, Forced, Cancelled, Closed} }

// An Observer is told what becomes of the operations it watches over; a
// purgatory observes the operations submitted to it, for its metrics and
// logs. Its methods are called with no lock held.
type Observer interface {
	// Completed is called after OnComplete (and OnExpiration) returned or
	// panicked. late is how long after its deadline an expired operation
	// completed, zero otherwise.
	Completed(op Operation, o Outcome, late time.Duration)
	// Panicked is called when a callback of op panicked; the panic has
	// been recovered.
	Panicked(op Operation, callback string, v any)
}
