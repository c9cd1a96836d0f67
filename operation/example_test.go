package operation_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

func ExampleNewFunc() {
	clk := timer.NewManualClock(0)
	p, _ := purgatory.New[string]("join", purgatory.WithClock(clk))
	defer p.Close()

	members := 1
	join := operation.NewFunc(
		func() bool { return members == 3 },
		func() { fmt.Println("rebalance with", members, "members:", clk.Now()) },
		nil,
	)
	_, _ = p.TryCompleteElseWatch(join, 5*time.Second, "group-a")
	members = 2
	p.CheckAndComplete("group-a")
	clk.Advance(5 * time.Second) // the third member never came
	// Output:
	// rebalance with 2 members: 5s
}

// member is a consumer group member's pending join: a group's operations
// share the group's lock, as Kafka's do, so that a check sees the group as
// one consistent whole.
type member struct {
	operation.State
	group *group
	name  string
}

type group struct {
	mu     sync.Mutex // every operation of the group runs TryComplete under it
	joined int
	size   int
}

func (m *member) TryComplete() bool { return m.group.joined == m.group.size }
func (m *member) OnComplete()       { fmt.Println(m.name, "joined:", m.Outcome()) }

func ExampleState_ShareLock() {
	p, _ := purgatory.New[string]("rebalance")
	defer p.Close()

	g := &group{size: 2}
	a, b := &member{group: g, name: "a"}, &member{group: g, name: "b"}
	for _, m := range []*member{a, b} {
		m.ShareLock(&g.mu) // before submitting
		g.mu.Lock()
		g.joined++ // what TryComplete reads changes under the lock
		g.mu.Unlock()
		_, _ = p.TryCompleteElseWatch(m, time.Minute, "group-1")
	}
	// b's submission found the group complete; a waits for a check.
	p.CheckAndComplete("group-1")
	// Output:
	// b joined: completed
	// a joined: completed
}

// ForceComplete answers an operation from outside, on the calling
// goroutine; it reports false if something else answered it first.
func ExampleState_ForceComplete() {
	p, _ := purgatory.New[string]("fetch")
	defer p.Close()

	op := operation.NewFunc(nil, nil, nil)
	op.Complete = func() { fmt.Println("answered:", op.Outcome()) }
	_, _ = p.TryCompleteElseWatch(op, time.Minute, "deleted-topic-0")
	fmt.Println("forced:", op.ForceComplete())
	fmt.Println("forced again:", op.ForceComplete())
	// Output:
	// answered: forced
	// forced: true
	// forced again: false
}

// A handler can wait for its operation's answer: Done is closed once
// OnComplete has run.
func ExampleState_Wait() {
	p, _ := purgatory.New[string]("produce")
	defer p.Close()

	var answer string
	op := operation.NewFunc(nil, func() { answer = "acknowledged" }, nil)
	_, _ = p.TryCompleteElseWatch(op, 10*time.Millisecond, "orders-0")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := op.Wait(ctx); err == nil {
		fmt.Println(answer, "after", op.Outcome())
	}
	// Output:
	// acknowledged after expired
}
