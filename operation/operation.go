package operation

// An Operation is a request that cannot be answered yet: a long-poll fetch,
// an acks=all produce, a group join. Embed a State and implement TryComplete
// and OnComplete; State supplies OperationState and a default OnExpiration
// that does nothing:
//
//	type delayedFetch struct {
//		operation.State
//		// the partitions, min bytes, the callback that writes the response...
//	}
//
//	func (f *delayedFetch) TryComplete() bool { /* enough bytes yet? */ }
//	func (f *delayedFetch) OnComplete()       { /* write the response, once */ }
//
// An Operation is submitted once, to one purgatory (or one watchers).
type Operation interface {
	// TryComplete reports whether the operation's condition holds now (the
	// data it waits for has arrived, say). It only reports: the library
	// completes the operation and then calls OnComplete.
	//
	// It runs with the operation's lock held (see State.Mutex), on the
	// goroutine that submits the operation (twice: before and after it is
	// watched) or that calls CheckAndComplete on one of its keys, never
	// after the operation completed. It must be quick and must not block.
	// A panic counts as "not yet", and is logged and counted.
	//
	// It may call CheckAndComplete on the operation's own keys (to say it
	// changed what it reads): Go's mutex is not re-entrant, so that check
	// does not wait for the lock this try holds; it leaves the operation
	// to this try, which tries once more when it returns and completes the
	// operation if it can. A TryComplete that checks its own keys at every
	// try would ask for tries for ever, and is refused with a panic after a
	// thousand in a row. It must not call CheckAndComplete on a key of
	// another operation sharing its lock (State.ShareLock): that check
	// waits for the lock this try holds, and deadlocks.
	TryComplete() bool

	// OnComplete answers the operation. It runs exactly once for every
	// submitted operation, whatever completed it (see State.Outcome), with
	// no lock of the library held, not even the operation's own: it may
	// call back into any purgatory, even Close its own.
	//
	// It runs on the goroutine that completed the operation: the submitter
	// (the condition held at once), the caller of CheckAndComplete, the
	// caller of ForceComplete or Close, a timer worker when the deadline
	// passed, the goroutine running context.AfterFunc's callbacks when the
	// submission's context ended. It must not block for long: on a timer
	// worker it delays the expirations queued behind it, and in a
	// CheckAndComplete it delays the caller (a broker's produce path). A
	// panic is recovered, logged and counted; the operation still counts as
	// answered.
	OnComplete()

	// OnExpiration runs after OnComplete, on the same goroutine, only for
	// an operation that completed because its deadline passed, as in Kafka
	// (where it records expiration metrics). The State embedded provides
	// one that does nothing; define your own to override it.
	OnExpiration()

	// OperationState returns the embedded State; State provides it.
	OperationState() *State
}

// Outcome says why an operation completed.
type Outcome uint32

// The outcomes, in the order the metrics list them.
const (
	Pending     Outcome = iota // not completed yet
	Completed                  // TryComplete reported its condition holds
	Expired                    // its deadline passed (the timeout, or the submission context's deadline)
	Forced                     // ForceComplete, from outside the purgatory
	Cancelled                  // ForceComplete after its key was cancelled (CancelForKey)
	Closed                     // its purgatory, or the timer it shares, closed while it waited
	Rejected                   // it could not wait: the timer was at its cap (timer.WithMaxPending)
	ContextDone                // the context it was submitted with was cancelled
)

var outcomeNames = [...]string{"pending", "completed", "expired", "forced", "cancelled", "closed", "rejected", "context_done"}

// String returns the outcome's name, as used in metric labels.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Outcomes lists every outcome an operation can complete with.
func Outcomes() []Outcome {
	return []Outcome{Completed, Expired, Forced, Cancelled, Closed, Rejected, ContextDone}
}
