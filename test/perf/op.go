package main

import (
	"sync/atomic"
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// fakeOp is one request: Kafka's FakeOperation. Its condition comes true
// completesAt, a time the model drew; the completion queue then answers it
// with ForceComplete. A request whose draw reaches its timeout is left to the
// purgatory to expire.
type fakeOp struct {
	operation.State
	done        timer.Task    // its entry in the completion queue; runs (*completer)(op)
	rec         *recorder     // the run's tallies
	arrival     time.Duration // scheduled arrival on the run's clock, not the submit time: see generator.run
	completesAt time.Duration // when TryComplete starts to report true
	payload     []byte        // --size bytes, held until answered, as a real request's data would be
	calls       atomic.Int32  // OnComplete calls, to catch a second answer
}

// TryComplete reports whether the drawn latency has passed, as Kafka's
// FakeOperation does. Nothing calls CheckAndComplete, so this only matters at
// submission: a request submitted after its completion time (the generator
// fell that far behind) is answered at once.
func (o *fakeOp) TryComplete() bool { return o.rec.clk.Now() >= o.completesAt }

// OnComplete releases the payload and tells the recorder.
func (o *fakeOp) OnComplete() {
	o.payload = nil
	o.rec.completed(o)
}

// OnExpiration is counted apart from the outcome, to check that it runs
// exactly for the expired requests.
func (o *fakeOp) OnExpiration() { o.rec.expirations.Add(1) }

// completer is the Runner of fakeOp.done. A type of its own keeps Run off
// fakeOp's method set, where it would read as part of the Operation.
type completer fakeOp

func (c *completer) Run() { (*fakeOp)(c).ForceComplete() }

// recorder tallies one run's completions. The fields are written by whichever
// goroutine answers a request: the completion queue, the purgatory's timer
// workers, or the generator.
type recorder struct {
	clk         *timer.RealClock
	latency     histogram // arrival to OnComplete
	outcomes    [8]atomic.Int64
	calls       atomic.Int64 // every OnComplete, duplicates included
	duplicates  atomic.Int64 // OnComplete calls beyond an op's first
	expirations atomic.Int64 // OnExpiration calls
	remaining   atomic.Int64 // requests not answered yet: Kafka's latch
	allDone     chan struct{}
}

func newRecorder(clk *timer.RealClock, num int) *recorder {
	r := &recorder{clk: clk, allDone: make(chan struct{})}
	r.remaining.Store(int64(num))
	return r
}

func (r *recorder) completed(o *fakeOp) {
	r.calls.Add(1)
	if o.calls.Add(1) != 1 {
		// The library promises exactly once; count rather than panic so the
		// report shows how often it broke.
		r.duplicates.Add(1)
		return
	}
	r.latency.record(r.clk.Now() - o.arrival)
	r.outcomes[o.Outcome()&7].Add(1)
	if r.remaining.Add(-1) == 0 {
		close(r.allDone)
	}
}

func (r *recorder) outcome(o operation.Outcome) int64 { return r.outcomes[o&7].Load() }
