package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func TestCreateAndFindTopics(t *testing.T) {
	s, _ := newTestStore(t)
	b, err := s.CreateTopic("b", 3, s.TopicDefaults())
	require.NoError(t, err)
	a, err := s.CreateTopic("a", 1, s.TopicDefaults())
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID)
	assert.False(t, a.ID.IsZero())
	assert.Len(t, a.ID.String(), 22, "Kafka prints ids as 22 base64 characters")

	got, err := s.Topic("b")
	require.NoError(t, err)
	assert.Same(t, b, got)
	got, err = s.TopicByID(b.ID)
	require.NoError(t, err)
	assert.Same(t, b, got)
	p, err := s.Partition("b", 2)
	require.NoError(t, err)
	assert.Equal(t, int32(2), p.Index())
	assert.Same(t, b, p.Topic())

	_, err = s.Partition("b", 3)
	assert.ErrorIs(t, err, ErrUnknownPartition)
	_, err = s.Partition("b", -1)
	assert.ErrorIs(t, err, ErrUnknownPartition)
	_, err = s.Partition("c", 0)
	assert.ErrorIs(t, err, ErrUnknownTopic)
	_, err = s.TopicByID(TopicID{1})
	assert.ErrorIs(t, err, ErrUnknownTopic)

	var names []string
	for _, topic := range s.Topics() {
		names = append(names, topic.Name)
	}
	assert.Equal(t, []string{"a", "b"}, names)
}

func TestCreateTopicRefuses(t *testing.T) {
	s, _ := newTestStore(t)
	_, err := s.CreateTopic("taken", 1, s.TopicDefaults())
	require.NoError(t, err)
	tests := []struct {
		name       string
		topic      string
		partitions int32
		want       error
	}{
		{"taken", "taken", 1, ErrTopicExists},
		{"no partitions", "new", 0, ErrInvalidPartitions},
		{"negative partitions", "new", -1, ErrInvalidPartitions},
		{"too many partitions", "new", MaxPartitions + 1, ErrInvalidPartitions},
		{"empty name", "", 1, ErrInvalidTopic},
		{"dot", ".", 1, ErrInvalidTopic},
		{"dot dot", "..", 1, ErrInvalidTopic},
		{"slash", "a/b", 1, ErrInvalidTopic},
		{"space", "a b", 1, ErrInvalidTopic},
		{"too long", strings.Repeat("x", 250), 1, ErrInvalidTopic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, s.CheckCreate(tt.topic, tt.partitions), tt.want)
			_, err := s.CreateTopic(tt.topic, tt.partitions, s.TopicDefaults())
			assert.ErrorIs(t, err, tt.want)
		})
	}
	assert.NoError(t, ValidateTopicName(strings.Repeat("x", 249)+""), "249 characters is the limit")
	assert.NoError(t, ValidateTopicName("Az09._-"))
}

func TestDeleteTopic(t *testing.T) {
	s, _ := newTestStore(t)
	old, err := s.CreateTopic("t", 1, s.TopicDefaults())
	require.NoError(t, err)
	_, err = s.DeleteTopic("t")
	require.NoError(t, err)
	_, err = s.Topic("t")
	assert.ErrorIs(t, err, ErrUnknownTopic)
	_, err = s.DeleteTopic("t")
	assert.ErrorIs(t, err, ErrUnknownTopic)

	again, err := s.CreateTopic("t", 1, s.TopicDefaults())
	require.NoError(t, err, "the name is free again")
	assert.NotEqual(t, old.ID, again.ID, "with a new id")
	_, err = s.DeleteTopicByID(old.ID)
	assert.ErrorIs(t, err, ErrUnknownTopic, "the old id is gone")
	got, err := s.DeleteTopicByID(again.ID)
	require.NoError(t, err)
	assert.Same(t, again, got)
	assert.Empty(t, s.Topics())
}

func TestTopicConfig(t *testing.T) {
	str := func(s string) *string { return &s }
	base := TopicConfig{Retention: time.Hour, RetentionBytes: -1, MaxMessageBytes: 1000}
	with := func(edit func(*TopicConfig)) TopicConfig {
		c := base
		edit(&c)
		return c
	}
	tests := []struct {
		name, config string
		value        *string
		want         TopicConfig
		err          bool
	}{
		{"retention.ms", ConfigRetentionMs, str("1500"), with(func(c *TopicConfig) { c.Retention = 1500 * time.Millisecond }), false},
		{"retention.ms forever", ConfigRetentionMs, str("-1"), with(func(c *TopicConfig) { c.Retention = -1 }), false},
		{"retention.bytes", ConfigRetentionBytes, str("4096"), with(func(c *TopicConfig) { c.RetentionBytes = 4096 }), false},
		{"max.message.bytes", ConfigMaxMessageBytes, str("2000"), with(func(c *TopicConfig) { c.MaxMessageBytes = 2000 }), false},
		{"min.insync.replicas", ConfigMinInsyncReplicas, str("2"), with(func(c *TopicConfig) { c.MinInsyncReplicas = 2 }), false},
		{"null keeps the default", ConfigRetentionMs, nil, base, false},
		{"not a number", ConfigRetentionMs, str("soon"), base, true},
		{"below -1", ConfigRetentionBytes, str("-2"), base, true},
		{"negative size", ConfigMaxMessageBytes, str("-1"), base, true},
		{"too large", ConfigMaxMessageBytes, str("3000000000"), base, true},
		{"no in-sync replica", ConfigMinInsyncReplicas, str("0"), base, true},
		{"min.insync.replicas unbounded", ConfigMinInsyncReplicas, str("-1"), base, true},
		{"min.insync.replicas too large", ConfigMinInsyncReplicas, str("3000000000"), base, true},
		{"unclean.leader.election.enable", ConfigUncleanLeaderElection, str("True"), with(func(c *TopicConfig) { c.UncleanLeaderElection = true }), false},
		{"unclean.leader.election.enable: false", ConfigUncleanLeaderElection, str("false"), base, false},
		{"unclean.leader.election.enable: not a boolean", ConfigUncleanLeaderElection, str("1"), base, true},
		{"cleanup.policy", ConfigCleanupPolicy, str("compact"), with(func(c *TopicConfig) { c.Cleanup = CleanupCompact }), false},
		{"unsupported", "message.timestamp.type", str("LogAppendTime"), base, true},
		{"unknown", "no.such.config", nil, base, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.With(tt.config, tt.value)
			if tt.err {
				assert.ErrorIs(t, err, ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, []ConfigValue{{ConfigCleanupPolicy, "delete"}, {ConfigDeleteRetentionMs, "0"},
		{ConfigFollowerThrottledReplicas, ""}, {ConfigLeaderThrottledReplicas, ""}, {ConfigMaxCompactionLag, "9223372036854775807"},
		{ConfigMaxMessageBytes, "1000"}, {ConfigDirtyRatio, "0"}, {ConfigMinCompactionLag, "0"}, {ConfigMinInsyncReplicas, "1"},
		{ConfigRetentionBytes, "-1"}, {ConfigRetentionMs, "3600000"}, {ConfigSegmentBytes, "0"}, {ConfigSegmentMs, "0"},
		{ConfigUncleanLeaderElection, "false"}}, base.Values(), "min.insync.replicas unset is 1; by name")
	assert.Equal(t, int32(1), base.MinISR())
	assert.Equal(t, int32(3), with(func(c *TopicConfig) { c.MinInsyncReplicas = 3 }).MinISR())
}

func TestTopicDefaultsMinISR(t *testing.T) {
	s, _ := newTestStore(t)
	assert.Equal(t, int32(1), s.TopicDefaults().MinInsyncReplicas, "Kafka's default")
	s, _ = newTestStore(t, WithTopicDefaults(TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1000}))
	assert.Equal(t, int32(1), s.TopicDefaults().MinInsyncReplicas, "defaults built without it: 1")
	topic, err := s.CreateTopic("t", 1, TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1000})
	require.NoError(t, err)
	assert.Equal(t, int32(1), topic.Config().MinInsyncReplicas, "a topic's config says it: 1")
	assert.Equal(t, int16(1), topic.ReplicationFactor)
}

// TestCreateTopicSpec creates topics under ids given, as a broker mirroring
// its controller's topics does, with replication factors.
func TestCreateTopicSpec(t *testing.T) {
	s, _ := newTestStore(t)
	id := TopicID{7, 7, 7}
	cfg := forever
	cfg.MinInsyncReplicas = 2
	topic, err := s.CreateTopicSpec(TopicSpec{Name: "mirrored", ID: id, Partitions: 2, Config: cfg, ReplicationFactor: 3})
	require.NoError(t, err)
	assert.Equal(t, id, topic.ID, "the id given")
	assert.Equal(t, int16(3), topic.ReplicationFactor)
	assert.Equal(t, cfg, topic.Config())
	assert.Len(t, topic.Partitions, 2)
	got, err := s.TopicByID(id)
	require.NoError(t, err)
	assert.Same(t, topic, got)

	fresh, err := s.CreateTopicSpec(TopicSpec{Name: "fresh", Partitions: 1, Config: forever})
	require.NoError(t, err)
	assert.False(t, fresh.ID.IsZero(), "a zero id: a new one")
	assert.Equal(t, int16(1), fresh.ReplicationFactor, "0 is one replica")

	tests := []struct {
		name string
		spec TopicSpec
		want error
	}{
		{"the id taken", TopicSpec{Name: "other", ID: id, Partitions: 1, Config: forever}, ErrTopicExists},
		{"the name taken", TopicSpec{Name: "mirrored", ID: TopicID{8}, Partitions: 1, Config: forever}, ErrTopicExists},
		{"no partitions", TopicSpec{Name: "other", Partitions: 0, Config: forever}, ErrInvalidPartitions},
		{"an invalid name", TopicSpec{Name: "a b", Partitions: 1, Config: forever}, ErrInvalidTopic},
		{"a negative replication factor", TopicSpec{Name: "other", Partitions: 1, Config: forever, ReplicationFactor: -1}, ErrInvalidReplicationFactor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CreateTopicSpec(tt.spec)
			assert.ErrorIs(t, err, tt.want)
			_, err = s.Topic("other")
			assert.ErrorIs(t, err, ErrUnknownTopic, "nothing created")
		})
	}

	_, err = s.DeleteTopicByID(id)
	require.NoError(t, err)
	_, err = s.CreateTopicSpec(TopicSpec{Name: "again", ID: id, Partitions: 1, Config: forever})
	require.NoError(t, err, "a deleted topic's id is free again")
}

func TestStoreClose(t *testing.T) {
	s, err := New(WithRetentionCheckInterval(time.Hour))
	require.NoError(t, err)
	topic, err := s.CreateTopic("t", 1, s.TopicDefaults())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = s.CreateTopic("u", 1, s.TopicDefaults())
	assert.ErrorIs(t, err, ErrClosed)
	_, err = topic.Partitions[0].Append(batchtest.Values(1, "x"))
	assert.Error(t, err, "logs are closed")
}

func TestNewValidatesOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"nil clock":          WithClock(nil),
		"nil logger":         WithLogger(nil),
		"nil opener":         WithLogOpener(nil),
		"no producer memory": WithProducerState(0, time.Hour),
		"tiny batches":       WithTopicDefaults(TopicConfig{MaxMessageBytes: 10}),
	} {
		_, err := New(opt)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
	}
}

// failingLog fails its appends; it stands for a disk that errs.
type failingLog struct{ Log }

func (failingLog) Append(*Batch) error { return errors.New("disk full") }

func TestLogOpener(t *testing.T) {
	opened := 0
	s, _ := newTestStore(t, WithLogOpener(func(topic string, id TopicID, partition int32) (Log, error) {
		opened++
		if topic == "broken" && partition == 1 {
			return nil, errors.New("cannot open")
		}
		if topic == "full" {
			return failingLog{NewMemLog()}, nil
		}
		return NewMemLog(), nil
	}))
	_, err := s.CreateTopic("broken", 3, s.TopicDefaults())
	assert.ErrorContains(t, err, "cannot open")
	_, err = s.Topic("broken")
	assert.ErrorIs(t, err, ErrUnknownTopic, "a topic whose logs cannot all open is not created")

	full, err := s.CreateTopic("full", 1, s.TopicDefaults())
	require.NoError(t, err)
	_, err = full.Partitions[0].Append(batchtest.Values(1, "x"))
	assert.ErrorContains(t, err, "disk full")
	o, _ := full.Partitions[0].Offsets()
	assert.Equal(t, int64(0), o.HighWatermark, "a failed append moves nothing")
	assert.Equal(t, 3, opened)
}

// TestReopenRebuildsState opens a partition on a log that already holds
// batches, as a durable log would after a restart: the offsets continue and
// the producers' state is rebuilt, so a retry is still recognised.
func TestReopenRebuildsState(t *testing.T) {
	first, _ := newTestPartition(t, forever)
	_, err := first.Append(batchtest.Idempotent(4, 0, 0, 100, "a", "b"))
	require.NoError(t, err)
	_, err = first.Append(batchtest.Values(900, "c"))
	require.NoError(t, err)
	kept := first.log

	s, _ := newTestStore(t, WithLogOpener(func(string, TopicID, int32) (Log, error) { return kept, nil }))
	topic, err := s.CreateTopic("t", 1, forever)
	require.NoError(t, err)
	p := topic.Partitions[0]
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 3, LogEnd: 3}, o)
	res, err := p.Append(batchtest.Idempotent(4, 0, 0, 100, "a", "b"))
	require.NoError(t, err)
	assert.True(t, res.Duplicate)
	_, err = p.Append(batchtest.Idempotent(4, 0, 5, 100, "d"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
	_, ts, _, err := p.MaxTimestamp(ReadUncommitted)
	require.NoError(t, err)
	assert.Equal(t, int64(900), ts)
}

// stuckLog cannot drop batches: a log whose deletions fail.
type stuckLog struct{ Log }

func (stuckLog) DropBefore(int64) error { return errors.New("cannot delete") }

func TestAppendSucceedsWhenRetentionFails(t *testing.T) {
	s, _ := newTestStore(t, WithLogOpener(func(string, TopicID, int32) (Log, error) { return stuckLog{NewMemLog()}, nil }))
	topic, err := s.CreateTopic("t", 1, TopicConfig{Retention: -1, RetentionBytes: 0, MaxMessageBytes: 1 << 20})
	require.NoError(t, err)
	res, err := topic.Partitions[0].Append(batchtest.Values(1, "x"))
	require.NoError(t, err, "the batch is appended; a retry would duplicate it")
	assert.Equal(t, int64(0), res.BaseOffset)
	assert.ErrorContains(t, s.Sweep(), "cannot delete", "the sweep reports it")
}

// TestMaxPartitions: creations past the limit, all topics together, fail
// with ErrPartitionLimit, concurrent ones included (the partitions of a
// topic being created count while its logs open); a deletion, or a
// failed creation, gives its partitions back.
func TestMaxPartitions(t *testing.T) {
	s, _ := newTestStore(t, WithMaxPartitions(100))
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 20 {
		wg.Go(func() {
			if _, err := s.CreateTopic(fmt.Sprintf("t%d", i), 10, forever); err == nil {
				created.Add(1)
			} else {
				assert.ErrorIs(t, err, ErrPartitionLimit)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(10), created.Load(), "ten topics of ten partitions")
	assert.ErrorIs(t, s.CheckCreate("more", 1), ErrPartitionLimit)

	_, err := s.DeleteTopic(s.Topics()[0].Name)
	require.NoError(t, err)
	_, err = s.CreateTopic("again", 10, forever)
	assert.NoError(t, err, "the deleted topic's partitions are free again")
	_, err = s.CreateTopic("invalid name!", 1, forever)
	assert.ErrorIs(t, err, ErrInvalidTopic)
}

// TestReservedPartitions: partitions reserved for an internal topic that
// does not exist yet are not given to other topics; the internal topic
// takes them whenever it comes, and once it exists nothing is held back.
func TestReservedPartitions(t *testing.T) {
	s, _ := newTestStore(t, WithMaxPartitions(100), WithReservedPartitions("__consumer_offsets", 50))
	_, err := s.CreateTopic("clients", 60, forever)
	assert.ErrorIs(t, err, ErrPartitionLimit, "60 would leave the offsets topic 40 of its 50")
	assert.ErrorIs(t, s.CheckCreate("clients", 60), ErrPartitionLimit)
	_, err = s.CreateTopic("clients", 50, forever)
	require.NoError(t, err)
	assert.ErrorIs(t, s.CheckCreate("more", 1), ErrPartitionLimit, "the rest is the offsets topic's")
	require.NoError(t, s.CheckCreate("__consumer_offsets", 50))
	_, err = s.CreateTopic("__consumer_offsets", 50, forever)
	require.NoError(t, err, "its reservation is there for it")
	_, err = s.DeleteTopic("clients")
	require.NoError(t, err)
	_, err = s.CreateTopic("more", 50, forever)
	assert.NoError(t, err, "with the offsets topic created, nothing is held back")
}
