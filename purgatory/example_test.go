package purgatory_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// partition is a log the delayed fetches wait on.
type partition struct {
	mu   sync.Mutex
	size int
}

// delayedFetch is a long-poll fetch: it completes when the partition holds
// minBytes, or at its deadline with whatever there is.
type delayedFetch struct {
	operation.State
	p        *partition
	minBytes int
	respond  func(bytes int, expired bool)
}

func (f *delayedFetch) TryComplete() bool {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return f.p.size >= f.minBytes
}

func (f *delayedFetch) OnComplete() {
	f.p.mu.Lock()
	size := f.p.size
	f.p.mu.Unlock()
	f.respond(size, f.Outcome() == operation.Expired)
}

func (f *delayedFetch) OnExpiration() {}

func Example() {
	clk := timer.NewManualClock(0) // deterministic; leave it out for the real clock
	fetches, _ := purgatory.New[string]("fetch", purgatory.WithClock(clk))
	defer fetches.Close()

	log := &partition{}
	respond := func(name string) func(int, bool) {
		return func(bytes int, expired bool) {
			fmt.Printf("%s answered at %v with %d bytes (expired: %v)\n", name, clk.Now(), bytes, expired)
		}
	}
	_, _ = fetches.TryCompleteElseWatch(&delayedFetch{p: log, minBytes: 100, respond: respond("fetch A")},
		500*time.Millisecond, "orders-0")
	_, _ = fetches.TryCompleteElseWatch(&delayedFetch{p: log, minBytes: 1000, respond: respond("fetch B")},
		500*time.Millisecond, "orders-0")

	clk.Advance(100 * time.Millisecond)
	log.mu.Lock()
	log.size += 300 // a produce appends to orders-0...
	log.mu.Unlock()
	fetches.CheckAndComplete("orders-0") // ...and wakes its fetches

	clk.Advance(time.Second)
	// Output:
	// fetch A answered at 100ms with 300 bytes (expired: false)
	// fetch B answered at 500ms with 300 bytes (expired: true)
}

func ExampleFuturePurgatory() {
	clk := timer.NewManualClock(0)
	fp, _ := purgatory.NewFuturePurgatory[string]("futures", purgatory.WithClock(clk))
	defer fp.Close()

	replicas := []*purgatory.Future[string]{purgatory.NewFuture[string](), purgatory.NewFuture[string]()}
	_, _ = fp.Await(replicas, time.Second, func(fs []*purgatory.Future[string]) {
		for _, f := range fs {
			v, err := f.Result()
			fmt.Printf("%q %v\n", v, err)
		}
	})
	replicas[0].Complete("broker-2 acked", nil)
	clk.Advance(time.Second) // broker-3 never answers
	// Output:
	// "broker-2 acked" <nil>
	// "" purgatory: timed out
}

func ExamplePurgatory_CancelForKey() {
	clk := timer.NewManualClock(0)
	p, _ := purgatory.New[string]("produce", purgatory.WithClock(clk))
	defer p.Close()

	op := operation.NewFunc(nil, nil, nil)
	op.Complete = func() { fmt.Println("answered:", op.Outcome()) }
	_, _ = p.TryCompleteElseWatch(op, time.Minute, "deleted-topic-0")

	// The partition is deleted: its operations are handed back to answer.
	for _, op := range p.CancelForKey("deleted-topic-0") {
		op.OperationState().ForceComplete()
	}
	// Output:
	// answered: cancelled
}
