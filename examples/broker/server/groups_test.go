package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// newGroupServer starts a broker with no initial rebalance delay, holding
// the topic "orders" (three partitions) the tests commit offsets for.
func newGroupServer(t *testing.T) *Server {
	t.Helper()
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0 })
	createTopic(t, s, "orders", 3)
	return s
}

func joinGroupReq(v int16, group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 60000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("subscription of "+group)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return req
}

// join joins group as a new member at version v, as a client does:
// from v4 it is first answered MEMBER_ID_REQUIRED and joins again with its
// id.
func (c *rawConn) join(v int16, group string) *kmsg.JoinGroupResponse {
	c.T.Helper()
	resp := c.RoundTrip(joinGroupReq(v, group, "")).(*kmsg.JoinGroupResponse)
	if v >= 4 {
		require.Equal(c.T, kerr.MemberIDRequired.Code, resp.ErrorCode, "v%d", v)
		require.NotEmpty(c.T, resp.MemberID)
		resp = c.RoundTrip(joinGroupReq(v, group, resp.MemberID)).(*kmsg.JoinGroupResponse)
	}
	require.Equal(c.T, int16(0), resp.ErrorCode, "v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
	return resp
}

func syncGroupReq(v int16, group string, j *kmsg.JoinGroupResponse) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.Generation = group, j.MemberID, j.Generation
	if j.LeaderID == j.MemberID {
		for _, m := range j.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = m.MemberID, []byte("assignment of "+m.MemberID)
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
	}
	return req
}

// stable makes a one-member Stable group and returns the member's join.
func (c *rawConn) stable(group string) *kmsg.JoinGroupResponse {
	c.T.Helper()
	j := c.join(9, group)
	s := c.RoundTrip(syncGroupReq(5, group, j)).(*kmsg.SyncGroupResponse)
	require.Equal(c.T, int16(0), s.ErrorCode)
	return j
}

func (c *rawConn) heartbeat(v int16, group string, j *kmsg.JoinGroupResponse) int16 {
	c.T.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.Generation = group, j.MemberID, j.Generation
	return c.RoundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode
}

func (c *rawConn) describe(group string) kmsg.DescribeGroupsResponseGroup {
	c.T.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(5)
	req.Groups = []string{group}
	resp := c.RoundTrip(req).(*kmsg.DescribeGroupsResponse)
	require.Len(c.T, resp.Groups, 1)
	return resp.Groups[0]
}

func TestFindCoordinator(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	host, port, err := net.SplitHostPort(s.Addr().String())
	require.NoError(t, err)
	wantPort, _ := strconv.Atoi(port)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g", "h"}
		resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			assert.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
			assert.Equal(t, int32(1), resp.NodeID, "v%d", v)
			assert.Equal(t, host, resp.Host, "v%d", v)
			assert.Equal(t, int32(wantPort), resp.Port, "v%d", v)
			continue
		}
		require.Len(t, resp.Coordinators, 2, "v%d: one answer per key", v)
		for i, co := range resp.Coordinators {
			assert.Equal(t, req.CoordinatorKeys[i], co.Key)
			assert.Equal(t, int16(0), co.ErrorCode)
			assert.Equal(t, int32(1), co.NodeID)
			assert.Equal(t, host, co.Host)
			assert.Equal(t, int32(wantPort), co.Port)
		}
	}
	for _, v := range []int16{1, 3, 4, 6} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorType = 1 // a transactional id
		req.CoordinatorKey, req.CoordinatorKeys = "txn", []string{"txn"}
		resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
		code, node, port := resp.ErrorCode, resp.NodeID, resp.Port
		if v >= 4 {
			co := resp.Coordinators[0]
			code, node, port = co.ErrorCode, co.NodeID, co.Port
		}
		assert.Equal(t, int16(0), code, "v%d: the transaction coordinator, from __transaction_state", v)
		assert.Equal(t, int32(1), node, "v%d", v)
		assert.Equal(t, int32(wantPort), port, "v%d", v)
	}
}

func TestJoinGroupVersions(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	for v := int16(0); v <= 9; v++ {
		group := fmt.Sprintf("join-v%d", v)
		j := c.join(v, group)
		assert.Equal(t, int32(1), j.Generation, "v%d", v)
		assert.Equal(t, j.MemberID, j.LeaderID, "v%d: the only member leads", v)
		require.NotNil(t, j.Protocol)
		assert.Equal(t, "range", *j.Protocol, "v%d", v)
		if v >= 7 {
			require.NotNil(t, j.ProtocolType, "v%d", v)
			assert.Equal(t, "consumer", *j.ProtocolType)
		}
		require.Len(t, j.Members, 1, "v%d", v)
		assert.Equal(t, []byte("subscription of "+group), j.Members[0].ProtocolMetadata)
		assert.Equal(t, "test", c.describe(group).Members[0].ClientID, "v%d: the request's client id", v)
	}

	bad := joinGroupReq(5, "join-bad", "")
	bad.SessionTimeoutMillis = 1
	assert.Equal(t, kerr.InvalidSessionTimeout.Code, c.RoundTrip(bad).(*kmsg.JoinGroupResponse).ErrorCode)
}

func TestJoinGroupStaticMember(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	req := joinGroupReq(5, "static", "")
	req.InstanceID = kmsg.StringPtr("instance-1")
	j := c.RoundTrip(req).(*kmsg.JoinGroupResponse) // a static member gets no MEMBER_ID_REQUIRED
	require.Equal(t, int16(0), j.ErrorCode)
	require.Len(t, j.Members, 1)
	require.NotNil(t, j.Members[0].InstanceID)
	assert.Equal(t, "instance-1", *j.Members[0].InstanceID)
	sreq := syncGroupReq(5, "static", j)
	sreq.InstanceID = req.InstanceID
	require.Equal(t, int16(0), c.RoundTrip(sreq).(*kmsg.SyncGroupResponse).ErrorCode)

	// The process restarts: same instance, no member id. It is answered
	// at once, in the same generation.
	again := c.RoundTrip(req).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), again.ErrorCode)
	assert.NotEqual(t, j.MemberID, again.MemberID)
	assert.Equal(t, j.Generation, again.Generation)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(3)
	hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = "static", j.MemberID, req.InstanceID, j.Generation
	assert.Equal(t, kerr.FencedInstanceID.Code, c.RoundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, "the old id is fenced")
	assert.Equal(t, "Stable", c.describe("static").State)
}

func TestSyncGroupVersions(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	for v := int16(0); v <= 5; v++ {
		group := fmt.Sprintf("sync-v%d", v)
		j := c.join(4, group)
		resp := c.RoundTrip(syncGroupReq(v, group, j)).(*kmsg.SyncGroupResponse)
		require.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
		assert.Equal(t, []byte("assignment of "+j.MemberID), resp.MemberAssignment, "v%d", v)
		if v >= 5 {
			require.NotNil(t, resp.Protocol)
			assert.Equal(t, "range", *resp.Protocol)
		}
		stale := syncGroupReq(v, group, j)
		stale.Generation = 0
		assert.Equal(t, kerr.IllegalGeneration.Code, c.RoundTrip(stale).(*kmsg.SyncGroupResponse).ErrorCode, "v%d", v)
	}
}

func TestHeartbeatVersions(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	j := c.stable("hb")
	for v := int16(0); v <= 4; v++ {
		assert.Equal(t, int16(0), c.heartbeat(v, "hb", j), "v%d", v)
		gone := *j
		gone.MemberID = "nobody"
		assert.Equal(t, kerr.UnknownMemberID.Code, c.heartbeat(v, "hb", &gone), "v%d", v)
	}
}

func TestLeaveGroupVersions(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	for v := int16(0); v <= 5; v++ {
		group := fmt.Sprintf("leave-v%d", v)
		j := c.stable(group)
		req := kmsg.NewPtrLeaveGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID = group, j.MemberID
		if v >= 3 {
			m, unknown := kmsg.NewLeaveGroupRequestMember(), kmsg.NewLeaveGroupRequestMember()
			m.MemberID, unknown.MemberID = j.MemberID, "nobody"
			m.Reason = kmsg.StringPtr("test over")
			req.Members = []kmsg.LeaveGroupRequestMember{m, unknown}
		}
		resp := c.RoundTrip(req).(*kmsg.LeaveGroupResponse)
		assert.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
		if v >= 3 {
			require.Len(t, resp.Members, 2)
			assert.Equal(t, int16(0), resp.Members[0].ErrorCode)
			assert.Equal(t, kerr.UnknownMemberID.Code, resp.Members[1].ErrorCode, "v%d: each member answered", v)
		}
		assert.Equal(t, "Empty", c.describe(group).State, "v%d", v)
		if v < 3 {
			again := c.RoundTrip(req).(*kmsg.LeaveGroupResponse)
			assert.Equal(t, kerr.UnknownMemberID.Code, again.ErrorCode, "v%d: the member's error at the top", v)
		}
	}
}

func commitReq(v int16, group, member string, gen int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "orders"
	for p := range int32(2) {
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch = p, offset+int64(p), 3
		pp.Metadata = kmsg.StringPtr("meta")
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

func TestOffsetCommitAndFetchVersions(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	j := c.stable("offsets")
	for v := int16(1); v <= 9; v++ {
		offset := int64(v) * 100
		resp := c.RoundTrip(commitReq(v, "offsets", j.MemberID, j.Generation, offset)).(*kmsg.OffsetCommitResponse)
		require.Len(t, resp.Topics, 1)
		for _, p := range resp.Topics[0].Partitions {
			assert.Equal(t, int16(0), p.ErrorCode, "commit v%d", v)
		}
		stale := c.RoundTrip(commitReq(v, "offsets", j.MemberID, j.Generation+1, 0)).(*kmsg.OffsetCommitResponse)
		assert.Equal(t, kerr.IllegalGeneration.Code, stale.Topics[0].Partitions[0].ErrorCode, "commit v%d", v)

		for fv := int16(1); fv <= 9; fv++ {
			got := fetchOffsets(t, c, fv, "offsets", "orders", 0, 1, 2)
			assert.Equal(t, []int64{offset, offset + 1, -1}, got, "commit v%d, fetch v%d", v, fv)
		}
		f := kmsg.NewPtrOffsetFetchRequest()
		f.SetVersion(5)
		f.Group = "offsets"
		f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		p := c.RoundTrip(f).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		want := int32(-1)
		if v >= 6 {
			want = 3 // committed with the offset from v6
		}
		assert.Equal(t, want, p.LeaderEpoch, "commit v%d", v)
		require.NotNil(t, p.Metadata)
		assert.Equal(t, "meta", *p.Metadata)
	}

	// v2+: null topics fetch every committed offset; v8+ several groups.
	all := kmsg.NewPtrOffsetFetchRequest()
	all.SetVersion(7)
	all.Group, all.Topics, all.RequireStable = "offsets", nil, true
	resp := c.RoundTrip(all).(*kmsg.OffsetFetchResponse)
	require.Len(t, resp.Topics, 1)
	assert.Len(t, resp.Topics[0].Partitions, 2)
	multi := kmsg.NewPtrOffsetFetchRequest()
	multi.SetVersion(8)
	for _, g := range []string{"offsets", "never-committed"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		multi.Groups = append(multi.Groups, rg)
	}
	mresp := c.RoundTrip(multi).(*kmsg.OffsetFetchResponse)
	require.Len(t, mresp.Groups, 2)
	assert.Len(t, mresp.Groups[0].Topics, 1)
	assert.Empty(t, mresp.Groups[1].Topics)

	// A simple consumer (generation -1) stores offsets in a group nobody joins.
	simple := c.RoundTrip(commitReq(2, "simple", "", -1, 7)).(*kmsg.OffsetCommitResponse)
	assert.Equal(t, int16(0), simple.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, []int64{7}, fetchOffsets(t, c, 1, "simple", "orders", 0))
}

func TestOffsetCommitToUnknownPartition(t *testing.T) {
	s := newGroupServer(t)
	s.topicExists = func(topic string, partition int32) bool { return topic == "orders" && partition == 0 }
	c := dialRaw(t, s)
	resp := c.RoundTrip(commitReq(8, "g", "", -1, 5)).(*kmsg.OffsetCommitResponse)
	ps := resp.Topics[0].Partitions
	assert.Equal(t, int16(0), ps[0].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[1].ErrorCode, "partition 1 does not exist")
	assert.Equal(t, []int64{5, -1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
}

// fetchOffsets fetches group's offsets of topic's partitions at version v.
func fetchOffsets(t *testing.T, c *rawConn, v int16, group, topic string, partitions ...int32) []int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	var out []int64
	if v >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, partitions
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp := c.RoundTrip(req).(*kmsg.OffsetFetchResponse)
		require.Len(t, resp.Groups, 1)
		require.Equal(t, int16(0), resp.Groups[0].ErrorCode)
		for _, rt := range resp.Groups[0].Topics {
			for _, p := range rt.Partitions {
				out = append(out, p.Offset)
			}
		}
		return out
	}
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Group, req.Topics = group, []kmsg.OffsetFetchRequestTopic{rt}
	resp := c.RoundTrip(req).(*kmsg.OffsetFetchResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.Equal(t, int16(0), p.ErrorCode)
			out = append(out, p.Offset)
		}
	}
	return out
}

func TestDescribeListAndDeleteGroups(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	j := c.stable("busy")
	c.RoundTrip(commitReq(8, "idle", "", -1, 1))

	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{"busy", "idle", "nope"}
		req.IncludeAuthorizedOperations = v >= 3
		resp := c.RoundTrip(req).(*kmsg.DescribeGroupsResponse)
		require.Len(t, resp.Groups, 3)
		busy, idle, nope := resp.Groups[0], resp.Groups[1], resp.Groups[2]
		assert.Equal(t, "Stable", busy.State, "v%d", v)
		assert.Equal(t, "range", busy.Protocol)
		require.Len(t, busy.Members, 1)
		assert.Equal(t, j.MemberID, busy.Members[0].MemberID)
		assert.Equal(t, "/127.0.0.1", busy.Members[0].ClientHost)
		assert.Equal(t, []byte("assignment of "+j.MemberID), busy.Members[0].MemberAssignment)
		assert.Equal(t, "Empty", idle.State)
		assert.Equal(t, "Dead", nope.State)
		if v >= 6 {
			assert.Equal(t, kerr.GroupIDNotFound.Code, nope.ErrorCode)
		} else {
			assert.Equal(t, int16(0), nope.ErrorCode)
		}
		if v >= 3 {
			assert.Equal(t, acl.Supported(kmsg.ACLResourceTypeGroup).Bitfield(kmsg.ACLResourceTypeGroup), busy.AuthorizedOperations,
				"every operation on a group, without an authorizer, as Kafka answers")
		}
	}

	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(v)
		resp := c.RoundTrip(req).(*kmsg.ListGroupsResponse)
		require.Len(t, resp.Groups, 2, "v%d", v)
		assert.Equal(t, "busy", resp.Groups[0].Group)
		assert.Equal(t, "consumer", resp.Groups[0].ProtocolType)
		if v >= 4 {
			req.StatesFilter = []string{"stable"}
			resp = c.RoundTrip(req).(*kmsg.ListGroupsResponse)
			require.Len(t, resp.Groups, 1, "v%d: only Stable groups", v)
			assert.Equal(t, "Stable", resp.Groups[0].GroupState)
		}
		if v >= 5 {
			req.StatesFilter, req.TypesFilter = nil, []string{"consumer"}
			resp = c.RoundTrip(req).(*kmsg.ListGroupsResponse)
			assert.Empty(t, resp.Groups, "v%d: only classic groups here", v)
		}
	}

	for v := int16(0); v <= 3; v++ {
		c.RoundTrip(commitReq(8, "idle", "", -1, 1))
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{"busy", "idle", "nope"}
		resp := c.RoundTrip(req).(*kmsg.DeleteGroupsResponse)
		require.Len(t, resp.Groups, 3)
		assert.Equal(t, kerr.NonEmptyGroup.Code, resp.Groups[0].ErrorCode, "v%d", v)
		assert.Equal(t, int16(0), resp.Groups[1].ErrorCode, "v%d", v)
		assert.Equal(t, kerr.GroupIDNotFound.Code, resp.Groups[2].ErrorCode, "v%d", v)
		assert.Equal(t, "Dead", c.describe("idle").State)
	}
}

func TestOffsetDelete(t *testing.T) {
	s := newGroupServer(t)
	c := dialRaw(t, s)
	c.RoundTrip(commitReq(8, "g", "", -1, 1))
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = "orders"
	rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
	resp := c.RoundTrip(req).(*kmsg.OffsetDeleteResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, []int64{-1, 2}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))

	req.Group = "nope"
	assert.Equal(t, kerr.GroupIDNotFound.Code, c.RoundTrip(req).(*kmsg.OffsetDeleteResponse).ErrorCode)
}

// A JoinGroup that waits holds neither its connection's reader nor any
// other connection; its connection's answers still go out in order.
func TestWaitingJoinBlocksNothing(t *testing.T) {
	s := newGroupServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	x := a.stable("g") // x leads generation 1, alone

	// y joins (v0: no member id dance): the group rebalances and y waits
	// for x to rejoin. Behind y's JoinGroup, on the same connection, a
	// simple consumer's offset commit.
	joinCorr := b.Send(joinGroupReq(0, "g", ""))
	commitCorr := b.Send(commitReq(8, "elsewhere", "", -1, 42))

	// The commit behind the waiting join is served (its answer waits
	// behind the join's, in order).
	require.Eventually(t, func() bool {
		return fetchOffsets(t, a, 8, "elsewhere", "orders", 0)[0] == 42
	}, 10*time.Second, time.Millisecond, "the reader went on past the waiting JoinGroup")
	// On the other connection, x's heartbeat is answered: rejoin.
	assert.Equal(t, kerr.RebalanceInProgress.Code, a.heartbeat(4, "g", x))

	// x rejoins: everyone has, the rebalance completes.
	rx := a.RoundTrip(joinGroupReq(9, "g", x.MemberID)).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), rx.ErrorCode)
	assert.Equal(t, int32(2), rx.Generation)

	jy := kmsg.NewPtrJoinGroupResponse()
	jy.SetVersion(0)
	assert.Equal(t, joinCorr, b.Recv(jy), "the JoinGroup's answer first")
	assert.Equal(t, int16(0), jy.ErrorCode)
	assert.Equal(t, int32(2), jy.Generation)
	cy := kmsg.NewPtrOffsetCommitResponse()
	cy.SetVersion(8)
	assert.Equal(t, commitCorr, b.Recv(cy), "then the commit's")
	assert.Equal(t, int16(0), cy.Topics[0].Partitions[0].ErrorCode)
}

func TestDisconnectWhileJoinWaits(t *testing.T) {
	s := newGroupServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	x := a.stable("g")
	b.Send(joinGroupReq(0, "g", "")) // y waits for x to rejoin...
	require.Eventually(t, func() bool { return len(a.describe("g").Members) == 2 }, 10*time.Second, time.Millisecond)
	require.NoError(t, b.NC.Close()) // ...and goes away

	// Its join is withdrawn: y was new, so it leaves the group, and x's
	// rejoin completes the rebalance alone.
	require.Eventually(t, func() bool { return len(a.describe("g").Members) == 1 }, 10*time.Second, time.Millisecond)
	rx := a.RoundTrip(joinGroupReq(9, "g", x.MemberID)).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), rx.ErrorCode)
	require.Len(t, rx.Members, 1)
	assert.Equal(t, x.MemberID, rx.Members[0].MemberID)
}

func TestCloseAnswersWaitingJoin(t *testing.T) {
	s := newGroupServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	a.stable("g")
	// A new member (v5: with the member id dance) joins and waits for
	// the leader to rejoin.
	id := b.RoundTrip(joinGroupReq(5, "g", "")).(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.MemberIDRequired.Code, id.ErrorCode)
	corr := b.Send(joinGroupReq(5, "g", id.MemberID))
	require.Eventually(t, func() bool { return len(a.describe("g").Members) == 2 }, 10*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close(ctx))
	got := kmsg.NewPtrJoinGroupResponse()
	got.SetVersion(5)
	assert.Equal(t, corr, b.Recv(got))
	assert.Equal(t, kerr.NotCoordinator.Code, got.ErrorCode, "a waiting JoinGroup is answered when the broker closes")
}

func TestGroupPurgatoriesExportMetrics(t *testing.T) {
	s := newGroupServer(t)
	dialRaw(t, s).stable("g")
	families, err := s.Registry().Gather()
	require.NoError(t, err)
	found := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "purgatory_operations_pending" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				found[l.GetValue()] = true
			}
		}
	}
	for _, name := range []string{"Rebalance", "Heartbeat", "OffsetExpiration"} {
		assert.True(t, found[name], "the %s purgatory's metrics are on the broker's registry", name)
	}
}
