package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listedGroups returns ListGroups' answer, by group id, as group type.
func listedGroups(t *testing.T, tc *testConn, s *Server) map[string]string {
	t.Helper()
	list := tc.await(tc.serve(s, kmsg.NewPtrListGroupsRequest())).(*kmsg.ListGroupsResponse)
	require.Zero(t, list.ErrorCode)
	out := map[string]string{}
	for _, g := range list.Groups {
		out[g.Group] = g.GroupType + "/" + g.GroupState
	}
	return out
}

// offsetsExpiring is how many groups' offset expiries are armed.
func offsetsExpiring(s *Server) int { return s.groups.PurgatorySizes()["OffsetExpiration"].Pending }

// TestEmptyConsumerGroupGoes checks the end of a KIP-848 group: while it
// has members its offsets do not expire (no expiry is armed for them);
// when the last member leaves a group without offsets is deleted at once,
// gone from ListGroups and ConsumerGroupDescribe, and one with offsets
// stays, Empty, with its offsets expiring.
func TestEmptyConsumerGroupGoes(t *testing.T) {
	s := newGroupServer(t)
	awaitCoordinator(t, s, "bare", "kept")
	tc := newTestConn(t, s)

	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "bare", "m", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	require.Equal(t, "consumer/Stable", listedGroups(t, tc, s)["bare"])
	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "bare", "m", -1, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	assert.NotContains(t, listedGroups(t, tc, s), "bare", "left without offsets: deleted")
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"bare"}
	described := tc.await(tc.serve(s, d)).(*kmsg.ConsumerGroupDescribeResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, described.Groups[0].ErrorCode, "ConsumerGroupDescribe")

	joined := tc.await(tc.serve(s, cgHeartbeat(1, "kept", "m", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, joined.ErrorCode)
	commit := tc.await(tc.serve(s, commitReq(9, "kept", "m", joined.MemberEpoch, 10))).(*kmsg.OffsetCommitResponse)
	for _, p := range commit.Topics[0].Partitions {
		require.Zero(t, p.ErrorCode)
	}
	assert.Zero(t, offsetsExpiring(s), "a member is in: its offsets do not expire")
	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "kept", "m", -1, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	assert.Equal(t, "consumer/Empty", listedGroups(t, tc, s)["kept"], "left with offsets: kept, Empty")
	assert.Equal(t, 1, offsetsExpiring(s), "its offsets expire now")

	// A member back holds them again: the armed expiry finds it held
	// when due and leaves them (group.WithHeld).
	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "kept", "m2", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	assert.Equal(t, "consumer/Stable", listedGroups(t, tc, s)["kept"])
}

// TestConsumerGroupOffsetsExpireOnceEmpty has offsets.retention.minutes
// pass while a member is in, then the member leave: the offsets, past
// their retention, expire, and the group goes with them.
func TestConsumerGroupOffsetsExpireOnceEmpty(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance, c.OffsetsRetention = 0, time.Millisecond })
	createTopic(t, s, "orders", 3)
	awaitCoordinator(t, s, "cg")
	tc := newTestConn(t, s)
	joined := tc.await(tc.serve(s, cgHeartbeat(1, "cg", "m", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, joined.ErrorCode)
	commit := tc.await(tc.serve(s, commitReq(9, "cg", "m", joined.MemberEpoch, 10))).(*kmsg.OffsetCommitResponse)
	require.Zero(t, commit.Topics[0].Partitions[0].ErrorCode)
	assert.Zero(t, offsetsExpiring(s), "a member is in: nothing is armed, whatever the retention")
	got, err := s.groups.FetchAllOffsets("cg", false)
	require.Nil(t, err)
	assert.NotEmpty(t, got, "the offsets are kept while the member is in")

	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "cg", "m", -1, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	require.Eventually(t, func() bool {
		_, found, _ := s.groups.DescribeGroup("cg")
		return !found && !s.consumers.Has("cg")
	}, 5*time.Second, time.Millisecond, "the offsets expired, and the group went with them")
	assert.NotContains(t, listedGroups(t, tc, s), "cg")
}
