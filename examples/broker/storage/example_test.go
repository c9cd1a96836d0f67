package storage_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func Example() {
	s, err := storage.New()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	topic, err := s.CreateTopic("orders", 1, s.TopicDefaults())
	if err != nil {
		panic(err)
	}
	p := topic.Partitions[0]

	// A producer's batch gets the log's next offsets; its retry is
	// recognised and answered with the same ones.
	batch := batchtest.Idempotent(1, 0, 0, time.Now().UnixMilli(), "first", "second")
	res, _ := p.Append(batch)
	fmt.Println("appended at", res.BaseOffset, "to", res.LastOffset)
	res, _ = p.Append(bytes.Clone(batch)) // a retry comes in a request of its own
	fmt.Println("retry answered with", res.BaseOffset, "duplicate:", res.Duplicate)

	read, _ := p.Read(1, storage.ReadUncommitted, 1<<20, true)
	recs, _ := batchtest.Decode(read.Records)
	fmt.Println("read", len(recs), "records from the batch holding offset 1; high watermark", read.HighWatermark)
	// Output:
	// appended at 0 to 1
	// retry answered with 0 duplicate: true
	// read 2 records from the batch holding offset 1; high watermark 2
}
