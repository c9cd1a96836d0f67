package kafkanet

import (
	"container/list"
	"errors"
	"sync"
)

// memBudget bounds the bytes the server holds for its clients
// (queued.max.request.bytes): the bodies of requests, from their first
// byte read until they are handled (Request.ReleaseBody; a produce's,
// whose batches alias the body, until it is answered), and the records of
// answers that hold them (a fetch's: Request.Room), from their read until
// they are written, and a connection's big read buffer (connReader) while
// a request is read through it. Kafka's budget covers requests only, since
// it sends fetched records from the files; the example broker holds them
// in memory, so they count too.
//
// A connection reading a request takes the bytes as they arrive (grow):
// when the budget is spent it waits, and so stops reading its socket,
// until bytes are given back; the reader counts and logs its stop, and
// the waiters are a gauge (waiting). Waiters are served in order. How
// much of the budget one connection or one client host may hold in
// requests still arriving is bounded before their bodies are read, by
// hostShares and the connection's share. So that bytes
// held by requests still arriving can never wedge every reader (each
// holding part of a request, all waiting for more), the first waiter may
// always go on past the budget if no other request does: one request at a
// time overdraws, by at most socket.request.max.bytes, and holds the
// overdraft until it gives its body back. An answer never waits: it takes
// what is left (take) and reads no more than that, beyond the one batch
// Kafka returns whatever its size.
//
// Lock order: a leaf; Conn.mu is never held while waiting here.
type memBudget struct {
	limit int64 // immutable; <= 0: unbounded (bytes are still counted)

	mu        sync.Mutex // guards the following
	used      int64
	overdraft *memCharge // the one charge allowed past the limit, or nil
	waiters   list.List  // of *memWaiter, in arrival order
}

// A memCharge is what one request or response holds of the budget.
// It is used by one goroutine at a time: the connection's reader, then
// whoever answers the request.
type memCharge struct {
	n         int64 // bytes held
	overdrawn bool  // holds the budget's overdraft
}

type memWaiter struct {
	c     *memCharge
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

// errBudgetClosed is returned by grow when its wait is cancelled.
var errBudgetClosed = errors.New("stopped waiting for memory")

func newMemBudget(limit int64) *memBudget { return &memBudget{limit: limit} }

// grow adds n bytes to c, waiting while the budget is spent, until done is
// closed (errBudgetClosed, nothing added). A charge that holds the
// overdraft grows at once. stopped, unless nil, is called if it has to
// wait, before it does, without b.mu held: the reader counts and logs
// that it stopped reading its socket.
func (b *memBudget) grow(c *memCharge, n int64, done <-chan struct{}, stopped func()) error {
	b.mu.Lock()
	if b.grantLocked(c, n, b.waiters.Len() == 0) {
		b.mu.Unlock()
		return nil
	}
	w := &memWaiter{c: c, n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	if stopped != nil {
		stopped()
	}
	return awaitGrant(&b.mu, w.ready, done, func() {
		b.waiters.Remove(e)
		b.wakeLocked() // the next waiter may be first now
	})
}

// awaitGrant waits until ready (what was asked for is granted) or done.
// On done it takes mu, and unless the grant came meanwhile (kept: the
// caller releases it) runs withdraw under it and returns errBudgetClosed.
func awaitGrant(mu *sync.Mutex, ready, done <-chan struct{}, withdraw func()) error {
	select {
	case <-ready:
		return nil
	case <-done:
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case <-ready: // granted meanwhile
		return nil
	default:
	}
	withdraw()
	return errBudgetClosed
}

// grantLocked adds n to c if the budget allows: within the limit, or past
// it for the overdraft's holder, or for the first waiter (first) when no
// one holds the overdraft, which it then takes.
//
// REQUIRES: b.mu held.
func (b *memBudget) grantLocked(c *memCharge, n int64, first bool) bool {
	switch {
	case b.limit <= 0 || c.overdrawn || (first && b.used+n <= b.limit):
	case first && b.overdraft == nil:
		b.overdraft, c.overdrawn = c, true
	default:
		return false
	}
	b.used += n
	c.n += n
	return true
}

// wakeLocked grants the waiters in order while the budget allows.
//
// REQUIRES: b.mu held.
func (b *memBudget) wakeLocked() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*memWaiter)
		if !b.grantLocked(w.c, w.n, true) {
			return
		}
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// take adds to c what is left of the budget, up to n, without waiting,
// and returns it: a fetch answer reads no more than that.
func (b *memBudget) take(c *memCharge, n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 {
		n = max(0, min(n, b.limit-b.used))
	}
	b.used += n
	c.n += n
	return n
}

// force adds n bytes to c whatever the budget says: what a fetch answer
// read beyond what it took (Kafka's one batch whatever its size).
func (b *memBudget) force(c *memCharge, n int64) {
	b.mu.Lock()
	b.used += n
	c.n += n
	b.mu.Unlock()
}

// release gives back n of the bytes c holds (all of them if n >= c.n),
// and the overdraft with the last of them.
func (b *memBudget) release(c *memCharge, n int64) {
	if c == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, c.n)
	b.used -= n
	c.n -= n
	if c.n == 0 && c.overdrawn {
		c.overdrawn, b.overdraft = false, nil
	}
	b.wakeLocked()
}

// releaseAll gives back everything c holds. Nil-safe.
func (b *memBudget) releaseAll(c *memCharge) {
	if c != nil {
		b.release(c, c.n)
	}
}

// waiting returns how many grows wait: readers stopped for memory.
func (b *memBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// inUse returns the bytes held.
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
