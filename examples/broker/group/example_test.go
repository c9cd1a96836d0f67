package group_test

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/timer"
)

// A consumer joins an empty group: its JoinGroup waits, as an operation in
// the Rebalance purgatory, for the initial rebalance delay, then is
// answered with the first generation, which it leads.
func Example() {
	clk := timer.NewManualClock(0) // deterministic; leave it out for the real clock
	c, err := group.New(group.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	req := group.JoinRequest{
		Group: "orders", ClientID: "billing", ProtocolType: "consumer",
		Protocols:      []group.Protocol{{Name: "cooperative-sticky"}, {Name: "range"}},
		SessionTimeout: 45 * time.Second, RebalanceTimeout: 5 * time.Minute,
	}
	c.JoinGroup(req, func(r group.JoinResult) {
		fmt.Printf("generation %d, protocol %s, leader: %v\n", r.Generation, r.Protocol, r.MemberID == r.Leader)
	}, nil)
	fmt.Println("waiting for more members")
	clk.Advance(group.DefaultInitialRebalanceDelay)
	// Output:
	// waiting for more members
	// generation 1, protocol cooperative-sticky, leader: true
}
