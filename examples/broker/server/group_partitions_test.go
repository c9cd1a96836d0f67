package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionForIsKafkas: a group has the partition Kafka gives it,
// abs(groupId.hashCode) % partitions, with Java's String.hashCode over
// UTF-16 code units and Kafka's Utils.abs (n & 0x7fffffff).
func TestPartitionForIsKafkas(t *testing.T) {
	for _, tt := range []struct {
		name  string
		group string
		hash  int32 // Java's "...".hashCode()
		part  int32 // of 50
	}{
		{"empty", "", 0, 0},
		{"one letter", "a", 97, 47},
		{"word", "hello", 99162322, 22},
		{"collision Aa", "Aa", 2112, 12},
		{"collision BB", "BB", 2112, 12},
		{"overflow to MIN_VALUE, whose abs is 0 in Kafka", "polygenelubricants", -2147483648, 0},
		{"negative", "my-group", -1906497762, 36},
		{"latin-1", "é", 233, 33},
		{"outside the BMP: two surrogates", "\U0001F600", 1772899, 49},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.hash, javaStringHash(tt.group), "String.hashCode")
			assert.Equal(t, tt.part, partitionFor(tt.group, 50), "partitionFor")
		})
	}
}

// TestOffsetsTopicReplicationIsCapped: offsets.topic.replication.factor
// (3) is capped at the cluster's size, so a broker alone has one replica;
// the topic keeps its records forever.
func TestOffsetsTopicReplicationIsCapped(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.OffsetsTopicPartitions = 3 })
	assert.Equal(t, int16(1), s.offsetsTopicRF())
	c := dialRaw(t, s)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(3)
	req.CoordinatorKey = "g"
	resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, s.cfg.NodeID, resp.NodeID, "the leader of the group's partition: the broker alone")
	info, err := s.Replica(offsetsTopic, partitionFor("g", 3))
	require.NoError(t, err)
	assert.Equal(t, []int32{s.cfg.NodeID}, info.Replicas)
	topic, err := s.data.store.Topic(offsetsTopic)
	require.NoError(t, err)
	assert.Negative(t, topic.Config.Retention, "its records are kept forever: no compaction, no retention")
	assert.Negative(t, topic.Config.RetentionBytes)
}

// TestGroupErrorFollowsTheOffsetsPartition: the first group request
// creates the offsets topic, whose partitions a broker alone leads and
// loads at once; a group whose partition is loading is answered
// COORDINATOR_LOAD_IN_PROGRESS. (NOT_COORDINATOR, from a broker that does
// not lead the partition, is TestClusterGroupsAtTheirPartitionLeader's.)
func TestGroupErrorFollowsTheOffsetsPartition(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.OffsetsTopicPartitions = 4 })
	c := dialRaw(t, s)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.MemberID = "g", "m"
	assert.Equal(t, kerr.UnknownMemberID.Code, c.RoundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode,
		"the topic is created by the first group request, and its partitions loaded at once: empty")

	idx := partitionFor("g", 4)
	t.Run("loading", func(t *testing.T) {
		s.gparts.mu.Lock()
		s.gparts.states[idx].loaded = false
		s.gparts.publishLocked()
		s.gparts.mu.Unlock()
		assert.Equal(t, kerr.CoordinatorLoadInProgress.Code, c.RoundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode)
		s.gparts.mu.Lock()
		s.gparts.states[idx].loaded = true
		s.gparts.publishLocked()
		s.gparts.mu.Unlock()
	})
}
