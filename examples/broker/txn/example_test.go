package txn_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/timer"
)

// memLog is a Log of one partition whose writes are durable at once.
type memLog struct{}

func (memLog) PartitionOf(string) (int32, bool) { return 0, true }

func (memLog) Append(string, []byte, bool) (func(done func(error)), error) {
	return func(done func(error)) { done(nil) }, nil
}

// printMarkers writes every marker at once, and prints it.
type printMarkers struct{}

func (printMarkers) WriteMarkers(m txn.Marker, parts []txn.TopicPartition, done func(map[txn.TopicPartition]error)) {
	res := make(map[txn.TopicPartition]error, len(parts))
	for _, p := range parts {
		fmt.Printf("marker commit=%v producer %d epoch %d in %s-%d\n", m.Commit, m.ProducerID, m.ProducerEpoch, p.Topic, p.Partition)
		res[p] = nil
	}
	done(res)
}

// A producer initializes its transactional id, writes to two partitions
// in a transaction and commits it: the commit is answered once it is
// written, and the markers follow.
func Example() {
	next := int64(41)
	c, err := txn.New(memLog{}, txn.Config{
		Markers:          printMarkers{},
		NextProducerID:   func() (int64, error) { next++; return next, nil },
		OffsetsPartition: func(string) int32 { return 0 },
		Clock:            timer.NewManualClock(0), // deterministic; leave it out for the real clock
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.Load(0, 1, &txn.Replay{}); err != nil { // this broker leads partition 0
		panic(err)
	}

	var pid int64
	var epoch int16
	c.InitProducerID("payments", time.Minute, -1, -1, func(id int64, e int16, err *kerr.Error) {
		pid, epoch = id, e
		fmt.Println("producer", id, "epoch", e, "error", err)
	})
	parts := []txn.TopicPartition{{Topic: "ledger", Partition: 0}, {Topic: "ledger", Partition: 1}}
	c.AddPartitions("payments", pid, epoch, parts, func(err *kerr.Error) { fmt.Println("added, error", err) })
	c.EndTxn("payments", pid, epoch, true, func(err *kerr.Error) { fmt.Println("committed, error", err) })
	fmt.Println(c.Describe([]string{"payments"})[0].State)
	// Output:
	// producer 42 epoch 0 error <nil>
	// added, error <nil>
	// committed, error <nil>
	// marker commit=true producer 42 epoch 0 in ledger-0
	// marker commit=true producer 42 epoch 0 in ledger-1
	// CompleteCommit
}
