package offsetlog_test

import (
	"fmt"
	"os"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/offsetlog"
)

// A coordinator on an offsets log: what it commits is there for the next.
func Example() {
	dir, err := os.MkdirTemp("", "offsetlog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	start := func() (*group.Coordinator, func()) {
		l, err := offsetlog.Open(dir)
		if err != nil {
			panic(err)
		}
		c, err := group.New(group.WithOffsetStore(l))
		if err != nil {
			panic(err)
		}
		return c, func() { c.Close(); l.Close() }
	}

	c, stop := start()
	c.CommitOffsets(group.CommitRequest{Group: "readers", Generation: -1, Retention: -1,
		Offsets: []group.CommitOffset{{Topic: "orders", Partition: 0, Offset: 42, LeaderEpoch: -1}}})
	stop()

	c, stop = start()
	defer stop()
	got, _ := c.FetchOffsets("readers", []group.TopicPartition{{Topic: "orders", Partition: 0}})
	fmt.Println("committed before the restart:", got[0].Offset)
	// Output:
	// committed before the restart: 42
}
