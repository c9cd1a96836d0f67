package server

import (
	"flag"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMaxSizeFlags: group.max.size, group.consumer.max.size and
// group.share.max.size default to Kafka's (Integer.MAX_VALUE twice, 200),
// and a value out of Kafka's ranges (at least 1; 1 to 1000) is refused at
// start.
func TestGroupMaxSizeFlags(t *testing.T) {
	cfg := Default()
	assert.Equal(t, math.MaxInt32, cfg.GroupMaxSize)
	assert.Equal(t, math.MaxInt32, cfg.GroupConsumerMaxSize)
	assert.Equal(t, 200, cfg.GroupShareMaxSize)

	tests := []struct {
		name    string
		args    []string
		wantErr string // "" when valid
	}{
		{"set", []string{"--group.max.size=1", "--group.consumer.max.size=1", "--group.share.max.size=1000"}, ""},
		{"classic zero", []string{"--group.max.size=0"}, "group.max.size"},
		{"consumer zero", []string{"--group.consumer.max.size=0"}, "group.consumer.max.size"},
		{"share zero", []string{"--group.share.max.size=0"}, "group.share.max.size"},
		{"share above 1000", []string{"--group.share.max.size=1001"}, "group.share.max.size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			fs := flag.NewFlagSet("broker", flag.ContinueOnError)
			cfg.RegisterFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			if tt.wantErr == "" {
				assert.NoError(t, cfg.validate())
				return
			}
			assert.ErrorContains(t, cfg.validate(), tt.wantErr)
		})
	}
}

// TestJoinGroupMaxSizeReached: a new member's JoinGroup into a Stable
// classic group at group.max.size is GROUP_MAX_SIZE_REACHED, with no
// member id, before MEMBER_ID_REQUIRED; the group goes on.
func TestJoinGroupMaxSizeReached(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0; c.GroupMaxSize = 1 })
	c := dialRaw(t, s)
	j := c.stable("full")

	for _, v := range []int16{3, 9} {
		resp := c.RoundTrip(joinGroupReq(v, "full", "")).(*kmsg.JoinGroupResponse)
		assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode, "v%d", v)
		assert.Empty(t, resp.MemberID, "v%d: no member id", v)
		assert.Equal(t, int32(-1), resp.Generation)
	}
	assert.Equal(t, int16(0), c.heartbeat(4, "full", j), "the member goes on, no rebalance")
	assert.Len(t, c.describe("full").Members, 1)
}

// TestConsumerGroupHeartbeatMaxSizeReached: a member joining a KIP-848
// group at group.consumer.max.size is GROUP_MAX_SIZE_REACHED with Kafka's
// message, and so is a classic member's JoinGroup into it.
func TestConsumerGroupHeartbeatMaxSizeReached(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0; c.GroupConsumerMaxSize = 1 })
	createTopic(t, s, "orders", 3)
	awaitCoordinator(t, s, "cg")
	c := dialRaw(t, s)
	require.Zero(t, c.RoundTrip(cgHeartbeat(1, "cg", "a", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

	b := c.RoundTrip(cgHeartbeat(1, "cg", "b", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, b.ErrorCode)
	require.NotNil(t, b.ErrorMessage)
	assert.Equal(t, "The consumer group has reached its maximum capacity of 1 members.", *b.ErrorMessage)

	j := c.RoundTrip(classicJoinReq("cg", "")).(*kmsg.JoinGroupResponse)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, j.ErrorCode, "a classic member's join")
}

// TestShareGroupHeartbeatMaxSizeReached: a member joining a share group
// at group.share.max.size is GROUP_MAX_SIZE_REACHED with Kafka's message.
func TestShareGroupHeartbeatMaxSizeReached(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupShareMaxSize = 1 })
	createTopic(t, s, "orders", 3)
	awaitCoordinator(t, s, "sg")
	tc := newTestConn(t, s)
	require.Zero(t, tc.await(tc.serve(s, shareJoin("sg", "m1"))).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)

	hb := tc.await(tc.serve(s, shareJoin("sg", "m2"))).(*kmsg.ShareGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, hb.ErrorCode)
	require.NotNil(t, hb.ErrorMessage)
	assert.Contains(t, *hb.ErrorMessage, "The share group has reached its maximum capacity of 1 members.")
}

// stableClassicGroup forms a Stable classic group of n ConsumerProtocol
// members (owning nothing), each on its own connection, and returns the
// connections and their last joins. Each newcomer starts a rebalance that
// completes once the members before it have rejoined: no timing decides.
func stableClassicGroup(t *testing.T, s *Server, group string, n int) ([]*rawConn, []*kmsg.JoinGroupResponse) {
	t.Helper()
	recv := func(c *rawConn, v int16, resp kmsg.Response) kmsg.Response {
		resp.SetVersion(v)
		c.Recv(resp)
		return resp
	}
	var (
		conns []*rawConn
		ids   []string
		joins []*kmsg.JoinGroupResponse
	)
	for range n {
		c := dialRaw(t, s)
		first := c.RoundTrip(classicJoinReq(group, "")).(*kmsg.JoinGroupResponse)
		require.Equal(t, kerr.MemberIDRequired.Code, first.ErrorCode)
		conns, ids = append(conns, c), append(ids, first.MemberID)
		// The newcomer's join first, then the others' rejoins: the
		// rebalance waits for all of them.
		c.Send(classicJoinReq(group, first.MemberID))
		for i := range len(conns) - 1 {
			conns[i].Send(classicJoinReq(group, ids[i]))
		}
		joins = joins[:0]
		for _, c := range conns {
			j := recv(c, 9, kmsg.NewPtrJoinGroupResponse()).(*kmsg.JoinGroupResponse)
			require.Zero(t, j.ErrorCode)
			joins = append(joins, j)
		}
		for i, c := range conns {
			c.Send(syncGroupReq(5, group, joins[i]))
		}
		for _, c := range conns {
			require.Zero(t, recv(c, 5, kmsg.NewPtrSyncGroupResponse()).(*kmsg.SyncGroupResponse).ErrorCode)
		}
	}
	return conns, joins
}

// TestUpgradeRefusedOverConsumerMaxSize: a consumer-protocol member
// joining a classic group with more members than group.consumer.max.size
// is GROUP_ID_NOT_FOUND with Kafka's message (validateOnlineUpgrade), and
// one joining a classic group exactly at it GROUP_MAX_SIZE_REACHED; either
// way the group stays classic and goes on.
func TestUpgradeRefusedOverConsumerMaxSize(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0; c.GroupConsumerMaxSize = 1 })
	createTopic(t, s, "orders", 3)
	awaitCoordinator(t, s, "two", "one")
	c := dialRaw(t, s)

	conns, two := stableClassicGroup(t, s, "two", 2)
	x := c.RoundTrip(cgHeartbeat(1, "two", "x", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, x.ErrorCode)
	require.NotNil(t, x.ErrorMessage)
	assert.Equal(t, "Cannot upgrade classic group two to consumer group because the group size exceeds the consumer group maximum size.",
		*x.ErrorMessage)
	assert.Equal(t, int16(0), conns[0].heartbeat(4, "two", two[0]), "the classic group goes on")
	assert.Equal(t, "Stable", c.describe("two").State)

	conns, one := stableClassicGroup(t, s, "one", 1)
	x = c.RoundTrip(cgHeartbeat(1, "one", "x", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, x.ErrorCode, "converted, the group would be full")
	assert.Equal(t, int16(0), conns[0].heartbeat(4, "one", one[0]), "not converted: the classic group goes on")
	assert.False(t, s.consumers.HasMembers("one"))
}

// TestDowngradeRefusedOverClassicMaxSize: when the last consumer-protocol
// member of a consumer group leaves, its classic members do not make a
// classic group if they are more than group.max.size (Kafka's
// validateOnlineDowngradeWithFencedMember): it stays a consumer group.
func TestDowngradeRefusedOverClassicMaxSize(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0; c.GroupMaxSize = 1 })
	createTopic(t, s, "orders", 3)
	awaitCoordinator(t, s, "mixed")
	c := dialRaw(t, s)
	x := c.RoundTrip(cgHeartbeat(1, "mixed", "x", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, x.ErrorCode)
	for range 2 {
		first := c.RoundTrip(classicJoinReq("mixed", "")).(*kmsg.JoinGroupResponse)
		require.Equal(t, kerr.MemberIDRequired.Code, first.ErrorCode)
		j := c.RoundTrip(classicJoinReq("mixed", first.MemberID)).(*kmsg.JoinGroupResponse)
		require.Zero(t, j.ErrorCode, "a classic member joins the consumer group")
	}

	leave := c.RoundTrip(cgHeartbeat(1, "mixed", "x", -1, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, leave.ErrorCode)
	assert.True(t, s.consumers.HasMembers("mixed"), "two classic members, a classic limit of one: no downgrade")
	d, ok := s.consumers.Describe("mixed")
	require.True(t, ok)
	assert.Len(t, d.Members, 2)
}
