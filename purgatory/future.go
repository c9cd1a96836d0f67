package purgatory

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/operation"
)

// ErrTimeout is the error of a Future that a DelayedFuture failed because its
// deadline passed first.
var ErrTimeout = errors.New("purgatory: timed out")

// A Future is a result that some goroutine provides later, once.
type Future[T any] struct {
	mu      sync.Mutex // guards the following
	done    bool
	val     T
	err     error
	waiters []func()
}

// NewFuture returns a future not done yet.
func NewFuture[T any]() *Future[T] { return &Future[T]{} }

// Complete sets the result if none was set and reports whether it did; the
// first call wins. It then checks the Awaits holding f, on the calling
// goroutine: an Await whose futures are now all done runs its callback
// here, before Complete returns. O(Awaits holding f), under f's lock only
// while the result is set.
func (f *Future[T]) Complete(v T, err error) bool {
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return false
	}
	f.done, f.val, f.err = true, v, err
	waiters := f.waiters
	f.waiters = nil
	f.mu.Unlock()
	for _, w := range waiters {
		w()
	}
	return true
}

// Done reports whether the result is set. O(1), under f's lock.
func (f *Future[T]) Done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// Result returns the result; before Complete it is the zero value and nil.
// O(1), under f's lock.
func (f *Future[T]) Result() (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.val, f.err
}

// onDone registers w to run when f completes, and reports false (without
// registering) if it has completed already.
func (f *Future[T]) onDone(w func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return false
	}
	f.waiters = append(f.waiters, w)
	return true
}

// DelayedFuture is an operation that completes when every one of a set of
// futures is done, or at its deadline, when it fails those still pending
// with ErrTimeout (Kafka's DelayedFuture). Its callback then runs once and
// sees every future done.
type DelayedFuture[T any] struct {
	operation.State
	futures  []*Future[T]
	callback func([]*Future[T])
}

// TryComplete reports whether every future is done.
func (d *DelayedFuture[T]) TryComplete() bool {
	for _, f := range d.futures {
		if !f.Done() {
			return false
		}
	}
	return true
}

// OnComplete fails the futures still pending (with ErrTimeout, or ErrClosed
// when the purgatory closed), then runs the callback.
func (d *DelayedFuture[T]) OnComplete() {
	if o := d.Outcome(); o != operation.Completed {
		err := ErrTimeout
		if o == operation.Closed {
			err = ErrClosed
		}
		var zero T
		for _, f := range d.futures {
			f.Complete(zero, err)
		}
	}
	d.callback(d.futures)
}

// FuturePurgatory awaits sets of futures with a deadline (Kafka's
// DelayedFuturePurgatory). Each await is watched under a key of its own, so
// a future completing checks only the awaits that hold it.
type FuturePurgatory[T any] struct {
	p    *Purgatory[uint64]
	next atomic.Uint64
}

// NewFuturePurgatory returns a purgatory for delayed futures; opts are those
// of New.
func NewFuturePurgatory[T any](name string, opts ...Option) (*FuturePurgatory[T], error) {
	p, err := New[uint64](name, opts...)
	if err != nil {
		return nil, err
	}
	return &FuturePurgatory[T]{p: p}, nil
}

// Await runs callback once every future is done, or at timeout after failing
// those still pending with ErrTimeout, exactly once. It runs on the
// goroutine that completes the last future (in Future.Complete), on a timer
// worker at the timeout, on Close's caller (the pending futures fail with
// ErrClosed), or before Await returns if every future is done already. It
// returns the delayed operation, which ForceComplete answers early (the
// pending futures then fail with ErrTimeout too). An error follows the
// purgatory's rule: the callback will never run (ErrClosed after Close).
// O(futures); it allocates the operation, a key and a check per future.
func (fp *FuturePurgatory[T]) Await(futures []*Future[T], timeout time.Duration, callback func([]*Future[T])) (*DelayedFuture[T], error) {
	d := &DelayedFuture[T]{futures: futures, callback: callback}
	key := fp.next.Add(1)
	done, err := fp.p.TryCompleteElseWatch(d, timeout, key)
	if err != nil || done {
		return d, err
	}
	check := func() { fp.p.CheckAndComplete(key) }
	for _, f := range futures {
		if !f.onDone(check) {
			check() // completed between the try and the registration
		}
	}
	return d, nil
}

// Purgatory returns the purgatory underneath, for its counts.
func (fp *FuturePurgatory[T]) Purgatory() *Purgatory[uint64] { return fp.p }

// Close answers every pending await (its pending futures fail with
// ErrClosed, its callback runs on the calling goroutine) and stops the
// purgatory.
func (fp *FuturePurgatory[T]) Close() error { return fp.p.Close() }
