package logdir_test

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// A store on a log dir: what it holds is there again after a restart.
func Example() {
	path, err := os.MkdirTemp("", "logdir-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(path)

	start := func() (*storage.Store, func()) {
		d, err := logdir.Open(path, logdir.WithFlush(1, 0)) // fsync every append
		if err != nil {
			panic(err)
		}
		s, err := storage.New(storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d))
		if err != nil {
			panic(err)
		}
		return s, func() { s.Close(); d.Close() }
	}

	s, stop := start()
	topic, _ := s.CreateTopic("orders", 1, s.TopicDefaults())
	batch := batchtest.Idempotent(1, 0, 0, time.Now().UnixMilli(), "first", "second")
	res, _ := topic.Partitions[0].Append(batch)
	fmt.Println("appended at", res.BaseOffset)
	stop()

	s, stop = start()
	defer stop()
	p, _ := s.Partition("orders", 0)
	o, _ := p.Offsets()
	fmt.Println("after a restart, the log ends at", o.LogEnd)
	res, _ = p.Append(bytes.Clone(batch)) // a retry comes in a request of its own
	fmt.Println("a retry is still recognised:", res.Duplicate)
	// Output:
	// appended at 0
	// after a restart, the log ends at 2
	// a retry is still recognised: true
}
