package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
)

// TestOffsetsTopicReplicationIsCapped: offsets.topic.replication.factor
// (3) is capped at the cluster's size, so a broker alone has one replica;
// the topic keeps its records forever.
func TestOffsetsTopicReplicationIsCapped(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.OffsetsTopicPartitions = 3 })
	assert.Equal(t, int16(1), s.offsets.ReplicationFactor())
	c := dialRaw(t, s)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(3)
	req.CoordinatorKey = "g"
	resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, s.cfg.NodeID, resp.NodeID, "the leader of the group's partition: the broker alone")
	info, err := s.Replica(offsetsTopic, coordinator.PartitionFor("g", 3))
	require.NoError(t, err)
	assert.Equal(t, []int32{s.cfg.NodeID}, info.Replicas)
	topic, err := s.data.store.Topic(offsetsTopic)
	require.NoError(t, err)
	assert.Negative(t, topic.Config().Retention, "its records are kept forever: no compaction, no retention")
	assert.Negative(t, topic.Config().RetentionBytes)
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

	idx := coordinator.PartitionFor("g", 4)
	t.Run("loading", func(t *testing.T) {
		s.offsets.Reload(idx, func() {
			assert.Equal(t, kerr.CoordinatorLoadInProgress.Code, c.RoundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode)
		})
	})
}
