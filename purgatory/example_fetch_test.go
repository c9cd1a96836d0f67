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
