package newcomer

import (
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/purgatory"
)

// A LongPoll parks waiters per key until the key's next event or their
// timeout, as an HTTP long-poll service does with its GETs.
type LongPoll interface {
	// Wait parks a waiter on key until the key's next Notify (OK true)
	// or until timeout (OK false).
	Wait(key string, timeout time.Duration) Waiter
	// Notify is an event on key: it answers every waiter parked on key
	// before it, and returns how many it answered.
	Notify(key string) int
	// Close answers every waiter still parked (OK false).
	Close()
}

// purgatoryLongPoll is the long-poll on the library: a waiter is an
// operation watched under its key that completes once the key's event
// count is past the count it saw.
type purgatoryLongPoll struct {
	waits *purgatory.Purgatory[string]

	mu     sync.Mutex // guards the following (lock order: an operation's lock, then mu)
	events map[string]uint64
}

func newPurgatoryLongPoll() (*purgatoryLongPoll, error) {
	waits, err := purgatory.New[string]("longpoll")
	if err != nil {
		return nil, err
	}
	return &purgatoryLongPoll{waits: waits, events: make(map[string]uint64)}, nil
}

// pollOp waits for an event on key after the after-th.
type pollOp struct {
	waitOp
	lp    *purgatoryLongPoll // immutable, as key and after
	key   string
	after uint64
}

func (op *pollOp) TryComplete() bool { return op.lp.count(op.key) > op.after }
func (op *pollOp) OnComplete()       {} // the waiter reads Done and OK

func (lp *purgatoryLongPoll) count(key string) uint64 {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.events[key]
}

func (lp *purgatoryLongPoll) Wait(key string, timeout time.Duration) Waiter {
	op := &pollOp{lp: lp, key: key, after: lp.count(key)}
	if _, err := lp.waits.TryCompleteElseWatch(op, timeout, key); err != nil {
		// Refused (closed): the operation was not taken, and will never
		// be completed; answer the waiter without it.
		return refused{}
	}
	return op
}

func (lp *purgatoryLongPoll) Notify(key string) int {
	lp.mu.Lock()
	lp.events[key]++
	lp.mu.Unlock()
	return lp.waits.CheckAndComplete(key) // with mu released: TryComplete takes it
}

func (lp *purgatoryLongPoll) Close() { _ = lp.waits.Close() }

// naiveLongPoll is the long-poll without the library: a map of key to its
// waiters under one mutex, and a time.AfterFunc per waiter that takes the
// waiter off its key's list when it fires.
type naiveLongPoll struct {
	mu      sync.Mutex // guards the following
	waiters map[string][]*naiveWaiter
	closed  bool
}

func newNaiveLongPoll() *naiveLongPoll {
	return &naiveLongPoll{waiters: make(map[string][]*naiveWaiter)}
}

func (lp *naiveLongPoll) Wait(key string, timeout time.Duration) Waiter {
	w := &naiveWaiter{done: make(chan struct{})}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	// Armed under mu, so that its callback (which takes mu) sees w listed.
	w.timer = time.AfterFunc(timeout, func() { lp.expire(key, w) })
	if lp.closed {
		w.answerLocked(false)
		return w
	}
	lp.waiters[key] = append(lp.waiters[key], w)
	return w
}

func (lp *naiveLongPoll) expire(key string, w *naiveWaiter) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	ws, ok := removeWaiter(lp.waiters[key], w)
	if !ok {
		return // the event answered it first
	}
	if len(ws) == 0 {
		delete(lp.waiters, key)
	} else {
		lp.waiters[key] = ws
	}
	w.answerLocked(false)
}

func (lp *naiveLongPoll) Notify(key string) int {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	ws := lp.waiters[key]
	delete(lp.waiters, key)
	for _, w := range ws {
		w.answerLocked(true)
	}
	return len(ws)
}

func (lp *naiveLongPoll) Close() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.closed = true
	for key, ws := range lp.waiters {
		for _, w := range ws {
			w.answerLocked(false)
		}
		delete(lp.waiters, key)
	}
}
