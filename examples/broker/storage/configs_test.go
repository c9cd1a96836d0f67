package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestAlterTopicConfig: a new config reaches every generation of a topic
// and every partition at once, whichever generation opened it: the next
// append sees the new max.message.bytes, the next sweep the new
// retention.
func TestAlterTopicConfig(t *testing.T) {
	s, clk := newTestStore(t)
	old, err := s.CreateTopic("a", 1, forever)
	require.NoError(t, err)
	grown, err := s.AddPartitions(old.ID, 2) // partition 1 opened by the second generation
	require.NoError(t, err)
	now := clk.Now().UnixMilli()
	big := batchtest.Values(now, string(make([]byte, 500)))
	for _, p := range grown.Partitions {
		_, err := p.Append(big)
		require.NoError(t, err)
	}

	small := forever
	small.MaxMessageBytes = 200
	small.Retention = time.Hour
	small.MinInsyncReplicas = 0 // normalized to 1, as at creation
	altered, err := s.AlterTopicConfig(old.ID, small)
	require.NoError(t, err)
	small.MinInsyncReplicas = 1
	assert.Same(t, grown, altered, "no new generation: the config is what they share")
	assert.Equal(t, small, old.Config(), "the generation held before sees it")
	assert.Equal(t, small, grown.Config())
	for _, p := range grown.Partitions {
		assert.Equal(t, small, p.Topic().Config(), "partition %d", p.Index())
		_, err := p.Append(big)
		assert.ErrorIs(t, err, ErrBatchTooLarge, "partition %d refuses what it took before", p.Index())
	}

	clk.Advance(2 * time.Hour)
	require.NoError(t, s.Sweep())
	for _, p := range grown.Partitions {
		o, err := p.Offsets()
		require.NoError(t, err)
		assert.Equal(t, int64(1), o.LogStart, "partition %d: the next sweep applies the new retention.ms", p.Index())
	}

	_, err = s.AlterTopicConfig(old.ID, forever)
	require.NoError(t, err)
	for _, p := range grown.Partitions {
		_, err := p.Append(big)
		assert.NoError(t, err, "raised again: partition %d takes it", p.Index())
	}

	_, err = s.AlterTopicConfig(TopicID{9}, forever)
	assert.ErrorIs(t, err, ErrUnknownTopic)
	_, err = s.DeleteTopic("a")
	require.NoError(t, err)
	_, err = s.AlterTopicConfig(old.ID, small)
	assert.ErrorIs(t, err, ErrUnknownTopic, "a deleted topic")
}

// TestAlterTopicConfigConcurrentReaders changes a topic's config while
// appends, lookups and sweeps read it, and the topic grows: run under
// -race, it checks that a reader sees one config or the other, whole,
// never a mix.
func TestAlterTopicConfigConcurrentReaders(t *testing.T) {
	s, clk := newTestStore(t)
	topic, err := s.CreateTopic("a", 1, forever)
	require.NoError(t, err)
	created, one, two := forever, forever, forever
	created.MinInsyncReplicas, one.MinInsyncReplicas, two.MinInsyncReplicas = 1, 1, 1 // as the store normalizes them
	one.MaxMessageBytes, one.Retention = 1000, time.Hour
	two.MaxMessageBytes, two.Retention = 2000, 2*time.Hour
	reader := func() bool {
		tp, err := s.Topic("a")
		if !assert.NoError(t, err) {
			return false
		}
		for _, p := range tp.Partitions {
			c := p.Topic().Config()
			assert.Contains(t, []TopicConfig{created, one, two}, c, "a config is seen whole")
			_, err := p.Append(batchtest.Values(clk.Now().UnixMilli(), "x"))
			assert.NoError(t, err)
		}
		assert.NoError(t, s.Sweep())
		return true
	}
	stop := readConcurrently(4, func() func() bool { return reader })
	for i := range 64 {
		cfg := one
		if i%2 == 1 {
			cfg = two
		}
		_, err := s.AlterTopicConfig(topic.ID, cfg)
		require.NoError(t, err)
		if i%8 == 0 {
			_, err = s.AddPartitions(topic.ID, int32(2+i/8))
			require.NoError(t, err)
		}
	}
	stop()
	last, err := s.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, two, last.Config())
}

// TestAlterTopicConfigSurvivesRestart: the catalog records the new config
// with the topic's current count, and a restarted store opens the topic
// with it; a catalog that fails leaves the config as it was.
func TestAlterTopicConfigSurvivesRestart(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	first, err := New(WithCatalog(cat), WithLogOpener(logs.open), WithRetentionCheckInterval(0))
	require.NoError(t, err)
	a, err := first.CreateTopicSpec(TopicSpec{Name: "a", Partitions: 1, Config: forever, ReplicationFactor: 2})
	require.NoError(t, err)
	_, err = first.AddPartitions(a.ID, 3)
	require.NoError(t, err)
	cfg := TopicConfig{Retention: time.Minute, RetentionBytes: 1 << 20, MaxMessageBytes: 300, MinInsyncReplicas: 2, UncleanLeaderElection: true}

	cat.failAdd = errors.New("disk full")
	_, err = first.AlterTopicConfig(a.ID, cfg)
	assert.ErrorContains(t, err, "disk full")
	created := forever
	created.MinInsyncReplicas = 1
	assert.Equal(t, created, a.Config(), "a change the catalog could not record is not made")
	cat.failAdd = nil

	_, err = first.AlterTopicConfig(a.ID, cfg)
	require.NoError(t, err)
	require.NoError(t, first.Close())
	specs, err := cat.Topics()
	require.NoError(t, err)
	require.Len(t, specs, 1)
	assert.Equal(t, TopicSpec{Name: "a", ID: a.ID, Partitions: 3, Config: cfg, ReplicationFactor: 2}, specs[0])

	second := storeOn(t, cat, logs)
	again, err := second.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, cfg, again.Config(), "the config survives")
	assert.Len(t, again.Partitions, 3)
}
