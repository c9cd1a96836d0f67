package server

import "github.com/gopurgatory/purgatory/operation"

// wait is a GET parked until its key moves past a version: the delayed
// operation of this service. The purgatory completes it when a POST's
// CheckAndComplete finds the key past after (Completed), at its timeout
// (Expired), when its client goes away (ContextDone), when the service
// shuts down (Closed), or at once when MaxWaiters wait already (Rejected).
// The GET's handler waits on Done and writes what OnComplete took.
type wait struct {
	operation.State
	store *store // immutable, as key and after
	key   string
	after uint64

	// answer is the key's entry when the wait completed: written by
	// OnComplete, read by the handler after Done is closed (the close
	// orders the two), then cleared by it.
	answer entry
}

// TryComplete reports whether the key is past the version the client has.
// It runs under the wait's lock and takes the store's read lock: the lock
// order of the package documentation.
func (w *wait) TryComplete() bool { return w.store.version(w.key) > w.after }

// OnComplete takes the answer. An expired wait reads the store too: a POST
// may have moved the key between the deadline and its own check, and a
// late answer should carry the value rather than say nothing is new.
// Other outcomes answer without the store (503, or no one to answer).
func (w *wait) OnComplete() {
	switch w.Outcome() {
	case operation.Completed, operation.Expired:
		w.answer = w.store.get(w.key)
	}
}
