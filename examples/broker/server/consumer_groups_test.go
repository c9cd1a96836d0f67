package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgHeartbeat is a KIP-848 join (epoch 0) to "orders", or a heartbeat
// saying owned at epoch.
func cgHeartbeat(v int16, group, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.Topics = owned
	if req.Topics == nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if epoch == 0 {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 60000, []string{"orders"}
	}
	return req
}

// owned converts a heartbeat's assignment into what the member says it
// owns.
func owned(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	var out []kmsg.ConsumerGroupHeartbeatRequestTopic
	for _, t := range a.Topics {
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
		out = append(out, rt)
	}
	return out
}

// The consumer protocol on the wire: advertised at v1, a v0 member named
// by the broker, a v1 member naming itself, its assignment by topic id,
// and the member epoch checked by OffsetCommit and OffsetFetch v9.
func TestConsumerGroupHeartbeatWire(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)

	av := c.RoundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, key := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		found := false
		for _, k := range av.ApiKeys {
			if k.ApiKey == int16(key) {
				found = true
				assert.Equal(t, int16(1), k.MaxVersion, "%v up to v1", key)
			}
		}
		assert.True(t, found, "%v advertised", key)
	}

	bad := c.RoundTrip(cgHeartbeat(1, "g", "", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.InvalidRequest.Code, bad.ErrorCode, "v1: the member names itself")
	v0 := c.RoundTrip(cgHeartbeat(0, "g0", "", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Equal(t, int16(0), v0.ErrorCode)
	require.NotNil(t, v0.MemberID)
	assert.NotEmpty(t, *v0.MemberID, "v0: the broker names the member")

	resp := c.RoundTrip(cgHeartbeat(1, "g", "m1", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis, "Kafka's default interval")
	require.NotNil(t, resp.Assignment)
	require.Len(t, resp.Assignment.Topics, 1)
	orders, err := s.image().Topic("orders")
	require.NoError(t, err)
	assert.Equal(t, [16]byte(orders.ID), resp.Assignment.Topics[0].TopicID, "assigned by topic id")
	assert.Equal(t, []int32{0, 1, 2}, resp.Assignment.Topics[0].Partitions)
	again := c.RoundTrip(cgHeartbeat(1, "g", "m1", 1, owned(resp.Assignment))).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Equal(t, int16(0), again.ErrorCode)

	commit := func(epoch int32) int16 {
		r := c.RoundTrip(commitReq(9, "g", "m1", epoch, 10)).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, int16(0), commit(1), "at the member's epoch")
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit(0), "an epoch before the member had the partition")
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit(2), "an epoch ahead of the member's")
	assert.Equal(t, kerr.UnknownMemberID.Code, c.RoundTrip(commitReq(9, "g", "m9", 1, 10)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	fetch := func(epoch int32) int16 {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.SetVersion(9)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "g", kmsg.StringPtr("m1"), epoch
		f.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return c.RoundTrip(f).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
	}
	assert.Equal(t, int16(0), fetch(1))
	assert.Equal(t, kerr.StaleMemberEpoch.Code, fetch(7))
	assert.Equal(t, []int64{10, 11, -1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1, 2), "the member's commit")

	// A classic member whose subscription is not the ConsumerProtocol's
	// does not join it, nor does a consumer member convert a classic group
	// whose members' subscriptions are not (Kafka's malformed embedded
	// protocol).
	j := c.RoundTrip(joinGroupReq(9, "g", "")).(*kmsg.JoinGroupResponse)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, j.ErrorCode)
	c.stable("classic")
	cl := c.RoundTrip(cgHeartbeat(1, "classic", "m1", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, cl.ErrorCode)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	assert.Equal(t, kerr.NonEmptyGroup.Code, c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	leave := cgHeartbeat(1, "g", "m1", -1, nil)
	require.Equal(t, int16(0), c.RoundTrip(leave).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	assert.Equal(t, int16(0), c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, "an empty consumer group is deleted")
	assert.Equal(t, []int64{-1, -1, -1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1, 2), "with its offsets")

	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	assert.Equal(t, kerr.GroupIDNotFound.Code, c.RoundTrip(d).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode)
}
