package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// allTopics lists every topic the broker reports, by name.
func allTopics(t *testing.T, c *rawConn) map[string]kmsg.MetadataResponseTopic {
	t.Helper()
	req := metadataRequest(12)
	req.Topics = nil
	resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
	out := make(map[string]kmsg.MetadataResponseTopic)
	for _, mt := range resp.Topics {
		out[*mt.Topic] = mt
	}
	return out
}

// A consumer subscribed by regular expression learns which topics are
// internal from Metadata, and Kafka always has one once a group coordinator
// was looked up: kgo's TestConsumeRegex waits for __consumer_offsets to be
// listed as internal after a FindCoordinator, and failed when it never was.
func TestFindCoordinatorCreatesTheOffsetsTopic(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.OffsetsTopicPartitions = 5 })
	c := dialRaw(t, s)
	require.NotContains(t, allTopics(t, c), offsetsTopic, "created lazily, as in Kafka")

	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.SetVersion(6)
	txn.CoordinatorType, txn.CoordinatorKeys = coordinatorTransaction, []string{"txn"}
	c.RoundTrip(txn)
	require.NotContains(t, allTopics(t, c), offsetsTopic, "a transactional id is not a group")

	for range 2 { // the second finds it there
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(6)
		req.CoordinatorKeys = []string{"g"}
		resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
		require.Len(t, resp.Coordinators, 1)
		assert.Equal(t, int16(0), resp.Coordinators[0].ErrorCode)
	}
	topics := allTopics(t, c)
	require.Contains(t, topics, offsetsTopic)
	mt := topics[offsetsTopic]
	assert.True(t, mt.IsInternal, "is_internal")
	assert.Len(t, mt.Partitions, 5, "offsets.topic.num.partitions")

	createTopic(t, s, "orders", 1)
	assert.False(t, allTopics(t, c)["orders"].IsInternal)
}

func TestMetadataAutoCreatesTheOffsetsTopicAsInternal(t *testing.T) {
	s := newTestServer(t, func(c *Config) {
		c.NumPartitions, c.OffsetsTopicPartitions, c.DefaultReplication = 2, 7, 3
	})
	c := dialRaw(t, s)
	req := metadataRequest(12, offsetsTopic)
	req.AllowAutoTopicCreation = true
	resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	mt := resp.Topics[0]
	assert.Equal(t, int16(0), mt.ErrorCode, "default.replication.factor is not the offsets topic's")
	assert.True(t, mt.IsInternal)
	assert.Len(t, mt.Partitions, 7, "offsets.topic.num.partitions, not num.partitions")
}

func TestProduceToAnInternalTopicIsRefused(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, offsetsTopic, 1)
	c := dialRaw(t, s)
	for _, acks := range []int16{1, -1} {
		sp := produced(t, c.RoundTrip(produceRequest(9, acks, offsetsTopic, 0, batchtest.Values(time.Now().UnixMilli(), "x"))))
		assert.Equal(t, kerr.InvalidTopicException.Code, sp.ErrorCode, "acks %d", acks)
		require.NotNil(t, sp.ErrorMessage)
		assert.Contains(t, *sp.ErrorMessage, "internal topic")
	}
	p, err := s.data.store.Partition(offsetsTopic, 0)
	require.NoError(t, err)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Zero(t, o.HighWatermark, "nothing appended")
}
