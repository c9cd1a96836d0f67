package storage

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// manualClock is a wall clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// nowMs is the clock's time as a record timestamp.
func (c *manualClock) nowMs() int64 { return c.Now().UnixMilli() }

// newTestStore returns a store without the retention goroutine (tests call
// Sweep), on a manual clock, closed at the end of the test.
func newTestStore(t *testing.T, opts ...Option) (*Store, *manualClock) {
	t.Helper()
	clk := newManualClock()
	s, err := New(append([]Option{WithClock(clk), WithRetentionCheckInterval(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, clk
}

// newTestPartition returns partition 0 of a new one-partition topic.
func newTestPartition(t *testing.T, cfg TopicConfig, opts ...Option) (*Partition, *manualClock) {
	t.Helper()
	s, clk := newTestStore(t, opts...)
	tp, err := s.CreateTopic("t", 1, cfg)
	require.NoError(t, err)
	return tp.Partitions[0], clk
}

// forever is a topic config without retention.
var forever = TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20}
