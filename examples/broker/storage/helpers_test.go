package storage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
)

// newTestStore returns a store without the retention goroutine (tests call
// Sweep), on a manual clock, closed at the end of the test.
func newTestStore(t *testing.T, opts ...Option) (*Store, *clocktest.Manual) {
	t.Helper()
	clk := clocktest.New()
	s, err := New(append([]Option{WithClock(clk), WithRetentionCheckInterval(0)}, opts...)...)
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
