package timer

import (
	"sync"
	"sync/atomic"

	"github.com/gopurgatory/purgatory/internal/goid"
)

// batchCap bounds a batch of expired tasks: big enough that handing one over
// costs little per task, small enough that a burst spreads over the workers.
const batchCap = 256

// maxFreeBatches bounds the batches kept for reuse, so that a burst's memory
// is returned once it has run.
const maxFreeBatches = 64

// executor runs batches of expired tasks on a fixed set of goroutines. Its
// queue is unbounded, so handing over a batch never blocks the clock: a slow
// task delays the tasks queued behind it, never the expiry of others.
//
// Lock order: a shard's mu, then executor.mu.
type executor struct {
	run func([]*Task) // runs one batch; recovers each task's panic

	// ids are the workers' goroutine ids, each written once by its worker
	// when it starts, so that close can tell whether it is called from a
	// task running on one of them.
	ids []atomic.Uint64

	mu      sync.Mutex // guards the following
	cond    sync.Cond  // signalled when work arrives, on close, and when a worker exits
	pending [][]*Task  // FIFO of batches to run
	free    [][]*Task  // empty batches to reuse, so steady firing allocates nothing
	closed  bool
	live    int // workers not yet exited
}

func newExecutor(workers int, run func([]*Task)) *executor {
	e := &executor{run: run, ids: make([]atomic.Uint64, workers), live: workers}
	e.cond.L = &e.mu
	for i := range workers {
		go e.work(&e.ids[i])
	}
	return e
}

// batch returns an empty batch to fill.
func (e *executor) batch() []*Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.free); n > 0 {
		b := e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
		return b
	}
	return make([]*Task, 0, batchCap)
}

// submit queues a batch; it never blocks on the workers.
func (e *executor) submit(b []*Task) {
	e.mu.Lock()
	e.pending = append(e.pending, b)
	e.mu.Unlock()
	e.cond.Signal()
}

func (e *executor) work(id *atomic.Uint64) {
	id.Store(goid.ID())
	defer func() {
		e.mu.Lock()
		e.live--
		e.mu.Unlock()
		e.cond.Broadcast()
	}()
	var done []*Task
	for {
		e.mu.Lock()
		if done != nil && len(e.free) < maxFreeBatches {
			clear(done)
			e.free = append(e.free, done[:0])
		}
		done = nil
		for len(e.pending) == 0 && !e.closed {
			e.cond.Wait()
		}
		if len(e.pending) == 0 {
			e.mu.Unlock()
			return // closed and drained
		}
		b := e.pending[0]
		e.pending[0] = nil
		e.pending = e.pending[1:]
		e.mu.Unlock()

		e.run(b)
		done = b
	}
}

// close lets the workers drain what is queued, then waits for them to exit:
// all of them, except the one the caller runs on (a task closing its own
// timer), which exits once that task returns. self is the caller's
// goroutine id.
func (e *executor) close(self uint64) {
	keep := 0
	for i := range e.ids {
		if e.ids[i].Load() == self {
			keep = 1
		}
	}
	e.mu.Lock()
	e.closed = true
	e.cond.Broadcast()
	for e.live > keep {
		e.cond.Wait()
	}
	e.mu.Unlock()
}
