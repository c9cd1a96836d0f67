package purgatory_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// acks counts the replicas that confirmed each write.
type acks struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *acks) count(write string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[write]
}

// replicated is an acks=all-style wait: a write is answered once need
// replicas confirmed it, or at its deadline with as many as did.
type replicated struct {
	operation.State
	acks  *acks
	write string
	need  int
	at    func() time.Duration
}

func (r *replicated) TryComplete() bool { return r.acks.count(r.write) >= r.need }

func (r *replicated) OnComplete() {
	fmt.Printf("%v: %s has %d of %d acks (%v)\n", r.at(), r.write, r.acks.count(r.write), r.need, r.Outcome())
}

// A counter wait, as a produce with acks=all waits for its replicas: each
// acknowledgement increments the write's count and checks its key, and the
// wait completes when the count reaches its target or fails at its
// deadline.
func Example_acksAll() {
	clk := timer.NewManualClock(0)
	writes, _ := purgatory.New[string]("produce", purgatory.WithClock(clk))
	defer writes.Close()
	a := &acks{n: map[string]int{}}
	ack := func(write string) { // a replica confirmed write
		a.mu.Lock()
		a.n[write]++
		a.mu.Unlock()
		writes.CheckAndComplete(write)
	}

	for _, w := range []string{"w1", "w2"} {
		_, _ = writes.TryCompleteElseWatch(&replicated{acks: a, write: w, need: 2, at: clk.Now}, 5*time.Second, w)
	}
	clk.Advance(time.Second)
	ack("w1")
	ack("w2")
	ack("w1")                    // w1 has both: answered now
	clk.Advance(5 * time.Second) // w2's second replica never answers
	// Output:
	// 1s: w1 has 2 of 2 acks (completed)
	// 5s: w2 has 1 of 2 acks (expired)
}
