package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestAddPartitions: a grown topic is a new Topic that shares the old
// one's partitions, data included, and adds empty ones; lookups see it at
// once, a holder of the old one keeps what it had.
func TestAddPartitions(t *testing.T) {
	s, _ := newTestStore(t)
	old, err := s.CreateTopicSpec(TopicSpec{Name: "a", Partitions: 2, Config: forever, ReplicationFactor: 3})
	require.NoError(t, err)
	_, err = old.Partitions[1].Append(batchtest.Values(time.Now().UnixMilli(), "kept"))
	require.NoError(t, err)

	grown, err := s.AddPartitions(old.ID, 4)
	require.NoError(t, err)
	require.Len(t, grown.Partitions, 4)
	assert.Len(t, old.Partitions, 2, "the topic held before keeps its partitions")
	assert.Same(t, old.Partitions[0], grown.Partitions[0], "the partitions there are shared")
	assert.Same(t, old.Partitions[1], grown.Partitions[1])
	assert.Equal(t, old.ID, grown.ID)
	assert.Equal(t, old.Config(), grown.Config())
	assert.Equal(t, int16(3), grown.ReplicationFactor)
	for i, p := range grown.Partitions {
		assert.Equal(t, int32(i), p.Index())
	}
	assert.Same(t, grown, grown.Partitions[3].Topic())
	o, err := grown.Partitions[1].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(1), o.LogEnd, "the data stays")
	o, err = grown.Partitions[3].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.LogEnd, "a new partition is empty")
	_, err = grown.Partitions[3].Append(batchtest.Values(time.Now().UnixMilli(), "new"))
	require.NoError(t, err)
	o, err = grown.Partitions[3].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.HighWatermark, "a new partition of a replicated topic has its high watermark moved by its replicas")

	byName, err := s.Topic("a")
	require.NoError(t, err)
	assert.Same(t, grown, byName)
	byID, err := s.TopicByID(old.ID)
	require.NoError(t, err)
	assert.Same(t, grown, byID)
	p, err := s.Partition("a", 3)
	require.NoError(t, err)
	assert.Same(t, grown.Partitions[3], p)
	assert.Equal(t, []*Topic{grown}, s.Topics())

	_, err = s.DeleteTopic("a")
	require.NoError(t, err)
	assert.True(t, old.Deleted(), "every generation of a topic learns of its deletion")
	assert.True(t, grown.Deleted())
	for _, p := range grown.Partitions {
		_, err := p.Offsets()
		assert.ErrorIs(t, err, ErrDeleted, "partition %d", p.Index())
	}
}

func TestAddPartitionsRefuses(t *testing.T) {
	s, _ := newTestStore(t, WithMaxPartitions(10))
	a, err := s.CreateTopic("a", 3, forever)
	require.NoError(t, err)
	tests := []struct {
		name  string
		id    TopicID
		count int32
		want  error
	}{
		{"as many", a.ID, 3, ErrInvalidPartitions},
		{"fewer", a.ID, 2, ErrInvalidPartitions},
		{"above MaxPartitions", a.ID, MaxPartitions + 1, ErrInvalidPartitions},
		{"past the store's limit", a.ID, 11, ErrPartitionLimit},
		{"unknown topic", TopicID{9}, 4, ErrUnknownTopic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AddPartitions(tc.id, tc.count)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	assert.ErrorIs(t, s.CheckAddPartitions("a", 11, 0), ErrPartitionLimit)
	assert.ErrorIs(t, s.CheckAddPartitions("a", MaxPartitions+1, 0), ErrInvalidPartitions)
	require.NoError(t, s.CheckAddPartitions("a", 10, 0))
	assert.ErrorIs(t, s.CheckAddPartitions("a", 10, 1), ErrPartitionLimit, "one more pending leaves no room")

	_, err = s.AddPartitions(a.ID, 10)
	require.NoError(t, err)
	assert.ErrorIs(t, s.CheckCreate("b", 1), ErrPartitionLimit, "the growth counts against the limit")
	_, err = s.DeleteTopic("a")
	require.NoError(t, err)
	_, err = s.CreateTopic("b", 10, forever)
	assert.NoError(t, err, "and its deletion frees all of it")
}

// TestAddPartitionsConcurrentReaders grows a topic while lookups, reads
// of every partition and retention sweeps go on: run under -race, it
// checks that a reader never sees a topic change under it.
func TestAddPartitionsConcurrentReaders(t *testing.T) {
	s, _ := newTestStore(t)
	topic, err := s.CreateTopic("a", 1, forever)
	require.NoError(t, err)
	stop := readConcurrently(4, func() func() bool {
		seen := 1 // this reader's last count
		return func() bool {
			tp, err := s.Topic("a")
			if !assert.NoError(t, err) {
				return false
			}
			n := len(tp.Partitions)
			assert.GreaterOrEqual(t, n, seen, "a topic never shrinks")
			seen = n
			for i, p := range tp.Partitions {
				assert.Equal(t, int32(i), p.Index())
				_, err := p.Offsets()
				assert.NoError(t, err)
			}
			_, err = s.Partition("a", int32(n-1))
			assert.NoError(t, err)
			assert.NoError(t, s.Sweep())
			return true
		}
	})
	for n := int32(2); n <= 32; n++ {
		_, err := s.AddPartitions(topic.ID, n)
		require.NoError(t, err)
	}
	stop()
	grown, err := s.Topic("a")
	require.NoError(t, err)
	assert.Len(t, grown.Partitions, 32)
}

// TestAddPartitionsSurvivesRestart: the catalog records the new count,
// and a restarted store opens every partition with its data.
func TestAddPartitionsSurvivesRestart(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	first, err := New(WithCatalog(cat), WithLogOpener(logs.open), WithRetentionCheckInterval(0))
	require.NoError(t, err)
	a, err := first.CreateTopicSpec(TopicSpec{Name: "a", Partitions: 1, Config: forever, ReplicationFactor: 2})
	require.NoError(t, err)
	grown, err := first.AddPartitions(a.ID, 3)
	require.NoError(t, err)
	_, err = grown.Partitions[2].Append(batchtest.Values(time.Now().UnixMilli(), "new"))
	require.NoError(t, err)
	require.NoError(t, first.Close())
	specs, err := cat.Topics()
	require.NoError(t, err)
	require.Len(t, specs, 1)
	assert.Equal(t, TopicSpec{Name: "a", ID: a.ID, Partitions: 3, Config: a.Config(), ReplicationFactor: 2}, specs[0])

	second := storeOn(t, cat, logs)
	again, err := second.Topic("a")
	require.NoError(t, err)
	require.Len(t, again.Partitions, 3)
	o, err := again.Partitions[2].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(1), o.LogEnd, "the new partition's data survives")
}

// TestAddPartitionsRollsBack: a growth whose logs or catalog fail leaves
// the topic, the catalog and the partition count as they were.
func TestAddPartitionsRollsBack(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	s, _ := newTestStore(t, WithCatalog(cat), WithLogOpener(logs.open), WithMaxPartitions(4))
	a, err := s.CreateTopic("a", 2, forever)
	require.NoError(t, err)

	logs.fail["a-3"] = errors.New("cannot open")
	_, err = s.AddPartitions(a.ID, 4)
	assert.ErrorContains(t, err, "cannot open")
	assert.Nil(t, logs.get("a-2"), "the logs opened are removed")
	delete(logs.fail, "a-3")

	cat.failAdd = errors.New("disk full")
	_, err = s.AddPartitions(a.ID, 4)
	assert.ErrorContains(t, err, "disk full")
	assert.Nil(t, logs.get("a-2"), "the logs opened are removed")
	assert.Nil(t, logs.get("a-3"))
	cat.failAdd = nil

	specs, _ := cat.Topics()
	require.Len(t, specs, 1)
	assert.Equal(t, int32(2), specs[0].Partitions, "the catalog keeps the count")
	same, err := s.Topic("a")
	require.NoError(t, err)
	assert.Same(t, a, same)
	_, err = s.AddPartitions(a.ID, 4)
	require.NoError(t, err, "the partitions a failed growth reserved are free again")
}

// TestAddPartitionsThenDelete blocks a growth in its catalog write while
// the topic is deleted: the deletion waits for it, then removes every
// partition, the new ones too, and the catalog forgets the topic.
func TestAddPartitionsThenDelete(t *testing.T) {
	cat, logs := newMemCatalog(), newKeptLogs()
	s := storeOn(t, cat, logs)
	a, err := s.CreateTopic("a", 1, forever)
	require.NoError(t, err)
	cat.addCalled, cat.release = make(chan struct{}), make(chan struct{})
	grown := make(chan error, 1)
	go func() {
		_, err := s.AddPartitions(a.ID, 3)
		grown <- err
	}()
	<-cat.addCalled
	_, err = s.Topic("a")
	assert.NoError(t, err, "lookups are not held up")
	deleted := make(chan error, 1)
	go func() {
		_, err := s.DeleteTopic("a")
		deleted <- err
	}()
	close(cat.release)
	require.NoError(t, <-grown)
	require.NoError(t, <-deleted)
	specs, _ := cat.Topics()
	assert.Empty(t, specs)
	for i := range 3 {
		assert.Nil(t, logs.get(fmt.Sprintf("a-%d", i)), "partition %d's log is removed", i)
	}
	_, err = s.Topic("a")
	assert.ErrorIs(t, err, ErrUnknownTopic)
}
