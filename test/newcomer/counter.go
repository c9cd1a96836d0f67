package newcomer

import (
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/purgatory"
)

// Counters hold a count per key that only grows, and waiters for a count to
// reach a target, as a produce with acks=all waits for the high watermark
// of its partition to pass its offset.
type Counters interface {
	// Await parks a waiter until key's count reaches target (OK true), or
	// until timeout (OK false).
	Await(key string, target uint64, timeout time.Duration) Waiter
	// Add adds n to key's count, and answers the waiters whose target it
	// reached.
	Add(key string, n uint64)
	// Close answers every waiter still parked (OK false).
	Close()
}

// purgatoryCounters is the counter wait on the library: a waiter is an
// operation watched under its key, complete once the count reaches its
// target.
type purgatoryCounters struct {
	waits *purgatory.Purgatory[string]

	mu     sync.Mutex // guards the following (lock order: an operation's lock, then mu)
	counts map[string]uint64
}

func newPurgatoryCounters() (*purgatoryCounters, error) {
	waits, err := purgatory.New[string]("counters")
	if err != nil {
		return nil, err
	}
	return &purgatoryCounters{waits: waits, counts: make(map[string]uint64)}, nil
}

// countOp waits for key's count to reach target.
type countOp struct {
	waitOp
	c      *purgatoryCounters // immutable, as key and target
	key    string
	target uint64
}

func (op *countOp) TryComplete() bool { return op.c.count(op.key) >= op.target }
func (op *countOp) OnComplete()       {} // the waiter reads Done and OK

func (c *purgatoryCounters) count(key string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

func (c *purgatoryCounters) Await(key string, target uint64, timeout time.Duration) Waiter {
	op := &countOp{c: c, key: key, target: target}
	if _, err := c.waits.TryCompleteElseWatch(op, timeout, key); err != nil {
		return refused{} // closed: not taken
	}
	return op
}

func (c *purgatoryCounters) Add(key string, n uint64) {
	c.mu.Lock()
	c.counts[key] += n
	c.mu.Unlock()
	c.waits.CheckAndComplete(key) // with mu released: TryComplete takes it
}

func (c *purgatoryCounters) Close() { _ = c.waits.Close() }

// naiveCounters is the counter wait without the library: the counts and
// each key's waiters in maps under one mutex, and a time.AfterFunc per
// waiter that takes it off its key's list when it fires.
type naiveCounters struct {
	mu      sync.Mutex // guards the following
	counts  map[string]uint64
	waiters map[string][]*naiveCountWaiter
	closed  bool
}

type naiveCountWaiter struct {
	naiveWaiter
	target uint64 // immutable
}

func newNaiveCounters() *naiveCounters {
	return &naiveCounters{counts: make(map[string]uint64), waiters: make(map[string][]*naiveCountWaiter)}
}

func (c *naiveCounters) Await(key string, target uint64, timeout time.Duration) Waiter {
	w := &naiveCountWaiter{naiveWaiter: naiveWaiter{done: make(chan struct{})}, target: target}
	c.mu.Lock()
	defer c.mu.Unlock()
	w.timer = time.AfterFunc(timeout, func() { c.expire(key, w) }) // under mu, as in naiveLongPoll
	switch {
	case c.closed:
		w.answerLocked(false)
	case c.counts[key] >= target:
		w.answerLocked(true)
	default:
		c.waiters[key] = append(c.waiters[key], w)
	}
	return w
}

func (c *naiveCounters) expire(key string, w *naiveCountWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws, ok := removeWaiter(c.waiters[key], w)
	if !ok {
		return // Add answered it first
	}
	c.setLocked(key, ws)
	w.answerLocked(false)
}

func (c *naiveCounters) Add(key string, n uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count := c.counts[key] + n
	c.counts[key] = count
	ws := c.waiters[key]
	kept := ws[:0]
	for _, w := range ws {
		if count >= w.target {
			w.answerLocked(true)
		} else {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	c.setLocked(key, kept)
}

// setLocked stores key's waiters, dropping the key when none is left.
// REQUIRES: c.mu held.
func (c *naiveCounters) setLocked(key string, ws []*naiveCountWaiter) {
	if len(ws) == 0 {
		delete(c.waiters, key)
		return
	}
	c.waiters[key] = ws
}

func (c *naiveCounters) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for key, ws := range c.waiters {
		for _, w := range ws {
			w.answerLocked(false)
		}
		delete(c.waiters, key)
	}
}
