// Command demo is the quick start's client: it produces a few records with
// acks=all to the broker that go run ./examples/broker starts, then reads
// them back through a consumer group, long-polling, and prints them.
//
//	go run ./examples/broker/demo [--brokers 127.0.0.1:9092] [--topic quickstart] [--records 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := flag.String("topic", "quickstart", "topic to produce to and consume from (created on first use)")
	n := flag.Int("records", 5, "records to produce and read back")
	flag.Parse()
	if err := run(strings.Split(*brokers, ","), *topic, *n); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(seeds []string, topic string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A fresh group each run reads the topic from the start.
	group := fmt.Sprintf("quickstart-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(5*time.Second), // a long poll: it waits in the broker's Fetch purgatory
	)
	if err != nil {
		return err
	}
	defer cl.Close()

	want := make(map[string]bool, n)
	for i := range n {
		v := fmt.Sprintf("hello %d", i)
		want[v] = true
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	fmt.Printf("produced %d records to %s with acks=all\n", n, topic)

	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume: %d records not read back: %w", len(want), err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("consume: %v", errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want[string(r.Value)] {
				delete(want, string(r.Value))
				fmt.Printf("consumed %s-%d@%d: %s\n", r.Topic, r.Partition, r.Offset, r.Value)
			}
		})
	}
	fmt.Printf("read them back through consumer group %s\n", group)
	return nil
}
