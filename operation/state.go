package operation

import (
	"context"
	"sync"
	"unsafe"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
)

// State is the library's part of an operation; embed it. Its zero value is
// ready to use, and it costs no allocation of its own: the deadline is an
// intrusive timer task, and watch lists hold a pointer to the State. It
// holds the completion word (set once, by compare-and-swap, which elects
// the one goroutine that runs the callbacks), the deadline's timer task and
// the lock TryComplete runs under: 104 bytes on a 64-bit platform.
type State struct {
	s lifecycle.State
}

// The library's other packages convert a *State to the *lifecycle.State it
// holds (lifecycle.Lookup), so State must be exactly that: the array
// lengths below are 0, or the package does not compile.
var (
	_ [unsafe.Sizeof(State{}) - unsafe.Sizeof(lifecycle.State{})]struct{}
	_ [unsafe.Sizeof(lifecycle.State{}) - unsafe.Sizeof(State{})]struct{}
	_ [unsafe.Offsetof(State{}.s)]struct{}
)

// OperationState returns s, so that a type embedding State satisfies
// Operation's OperationState.
func (s *State) OperationState() *State { return s }

// OnExpiration does nothing: it is the default for operations that have
// nothing to do on expiration beyond OnComplete. Define OnExpiration on your
// operation to override it.
func (s *State) OnExpiration() {}

// ShareLock makes the operation use mu as its lock, shared with other
// operations (Kafka does this for a consumer group's operations, so that
// completing one and checking another see one consistent group). Call it
// before submitting the operation; it panics afterwards. A TryComplete
// running under a shared lock must not complete (CheckAndComplete) an
// operation that shares it; OnComplete may, since it runs with no lock.
func (s *State) ShareLock(mu *sync.Mutex) { s.s.ShareLock(mu) }

// Mutex returns the lock TryComplete runs under: the operation's own, or the
// one given to ShareLock. Hold it when changing what TryComplete reads, so
// that a check sees either all of a change or none of it.
func (s *State) Mutex() *sync.Mutex { return s.s.Mutex() }

// IsCompleted reports whether the operation has completed. A completed
// operation stays completed. Its callbacks may still be running: Done tells
// when they have run. O(1), one atomic load.
func (s *State) IsCompleted() bool { return s.s.IsCompleted() }

// Outcome says why the operation completed, or Pending. O(1).
func (s *State) Outcome() Outcome { return Outcome(s.s.Outcome()) }

// ForceComplete completes the operation from outside, for example when its
// partition was deleted: it is taken off its timer and OnComplete runs, on
// the calling goroutine, before ForceComplete returns. It reports whether
// this call completed it; false means it had completed already (or was
// never submitted), and OnComplete ran or runs elsewhere, once. The outcome
// is Forced, or Cancelled after CancelForKey. Before the operation's
// submission has bound it (TryCompleteElseWatch is still running its first
// try on another goroutine) ForceComplete does nothing and returns false:
// order the two if both can happen, or submit with a context and cancel
// that. O(1) besides the callbacks; its watch entries go lazily (see
// package purgatory).
func (s *State) ForceComplete() bool { return s.s.ForceComplete() }

// Done returns a channel that is closed once the operation has completed
// and its callbacks (OnComplete, and OnExpiration if it expired) have run:
// a handler can wait on it for its answer to exist. The first call makes
// the channel (two allocations); an operation nobody waits for pays a
// single atomic OR when it finishes. It may be called at any time,
// before or after submission, from any goroutine. When it closes, the
// purgatory has counted the operation answered (Pending, the metrics).
//
// A submission that returned an error did not take the operation (the
// rule for errors of package purgatory): nothing will complete it, and
// its channel never closes. Check the error before waiting on it.
func (s *State) Done() <-chan struct{} { return s.s.Done() }

// Wait blocks until the operation has completed and its callbacks have run,
// and returns nil; or until ctx is done, and returns ctx.Err(). Waiting
// does not complete the operation: cancel its submission's context, or
// ForceComplete it, for that.
func (s *State) Wait(ctx context.Context) error { return s.s.Wait(ctx) }
