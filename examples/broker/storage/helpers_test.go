package storage

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
)

// newTestStore returns a store without the retention goroutine (tests call
// Sweep), on a manual clock, closed at the end of the test.
func newTestStore(t *testing.T, opts ...Option) (*Store, *clocktest.Manual) {
	t.Helper()
	clk := clocktest.New()
	s, err := New(append([]Option{WithClock(clk), WithRetentionCheckInterval(0), WithCleanerInterval(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, clk
}

// newTestPartition returns partition 0 of a new one-partition topic.
func newTestPartition(t *testing.T, cfg TopicConfig, opts ...Option) (*Partition, *clocktest.Manual) {
	t.Helper()
	s, clk := newTestStore(t, opts...)
	tp, err := s.CreateTopic("t", 1, cfg)
	require.NoError(t, err)
	return tp.Partitions[0], clk
}

// forever is a topic config without retention.
var forever = TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20}

// readConcurrently runs n goroutines, each calling a read function of
// its own, from newReader, in a loop until it returns false or the
// returned stop is called; stop waits for them.
func readConcurrently(n int, newReader func() (read func() bool)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		read := newReader()
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !read() {
					return
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
