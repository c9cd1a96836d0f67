package operation_test

import (
	"fmt"
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
