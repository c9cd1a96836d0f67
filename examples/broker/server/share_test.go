package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// shareFetchReq is a ShareFetch of partition 0 of topic for member of
// group "g" at session epoch, carrying acks for that partition if any.
func shareFetchReq(topic storage.TopicID, member string, epoch, maxWaitMs int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords = epoch, maxWaitMs, 100
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func shareAckReq(topic storage.TopicID, member string, epoch int32, first, last int64, typ int8) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr(member), epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// serve hands kreq to the broker on tc and returns the request, to await.
func (tc *testConn) serve(s *Server, kreq kmsg.Request) *kafkanet.Request {
	tc.t.Helper()
	r := tc.request(kreq)
	handler{s}.ServeKafka(r)
	return r
}

// acquired returns the only partition of a share fetch's answer.
func acquired(t *testing.T, resp kmsg.Response) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	sf := resp.(*kmsg.ShareFetchResponse)
	require.Zero(t, sf.ErrorCode)
	require.Len(t, sf.Topics, 1)
	require.Len(t, sf.Topics[0].Partitions, 1)
	return sf.Topics[0].Partitions[0]
}

// TestCompletedShareFetchesLeaveBothWatchLists is the KAFKA-19389 case:
// share fetches waiting under their share partition's key and their
// partition's, completed one after another by appends, must not stay
// referenced by the key that did not complete them. After each
// completion nothing is left watched, and the acknowledgement that
// follows cancels the acquisition lock.
func TestCompletedShareFetchesLeaveBothWatchLists(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-wait", 1)
	const n = 300
	for i := range n {
		tc := newTestConn(t, s) // a connection per member, as clients have
		member := fmt.Sprintf("m%d", i)
		r := tc.serve(s, shareFetchReq(topic.ID, member, 0, 30000))
		_, answered := tc.answer(r)
		require.False(t, answered, "nothing to acquire: the fetch waits")
		require.Equal(t, 1, s.share.fetches.Pending())
		require.Equal(t, 2, s.share.fetches.Watched(), "watched under two keys")

		tc.await(tc.serve(s, produceRequest(9, 1, "share-wait", 0, batchtest.Values(nowMs(), "v"))))
		part := acquired(t, tc.await(r))
		require.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: int64(i), LastOffset: int64(i), DeliveryCount: 1}},
			part.AcquiredRecords, "the append completed it with the new record")
		require.NotEmpty(t, part.Records)
		assert.Zero(t, s.share.fetches.Watched(), "completion %d left both watch lists at once", i)
		assert.Zero(t, s.share.fetches.Garbage())
		assert.Zero(t, s.share.fetches.Pending())

		ack := tc.await(tc.serve(s, shareAckReq(topic.ID, member, 1, int64(i), int64(i), 1))).(*kmsg.ShareAcknowledgeResponse)
		require.Zero(t, ack.ErrorCode)
		require.Zero(t, ack.Topics[0].Partitions[0].ErrorCode)
		assert.Zero(t, s.share.timer.Stats().Pending, "the acknowledgement cancelled the lock")
	}
}

// TestReleaseWakesAnotherMembersShareFetch has a member release the record
// it holds while another member's share fetch waits: the release, an event
// on the share partition's key alone, completes the waiting fetch with the
// record, delivered a second time.
func TestReleaseWakesAnotherMembersShareFetch(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-release", 1)
	tc := newTestConn(t, s)
	// Earliest, so that the record produced first is in the window.
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	tc.await(tc.serve(s, produceRequest(9, 1, "share-release", 0, batchtest.Values(nowMs(), "v"))))

	first := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", 0, 30000))))
	require.Len(t, first.AcquiredRecords, 1)
	waiting := tc.serve(s, shareFetchReq(topic.ID, "b", 0, 30000))
	_, answered := tc.answer(waiting)
	require.False(t, answered, "b finds nothing: a holds the record")

	// a releases it, piggy-backed on its next fetch, which then waits.
	tc.serve(s, shareFetchReq(topic.ID, "a", 1, 30000,
		kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{2}}))
	got := acquired(t, tc.await(waiting))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 0, DeliveryCount: 2}},
		got.AcquiredRecords, "b gets the released record, second delivery")
}

// TestShareFetchTakesABatchWholePastMaxRecordLocks: a share fetch that
// starts below group.share.partition.max.record.locks (2000) acquires
// its batch whole, past the bound, as Kafka's SharePartition does, rather
// than cutting it there for another member to be sent it again; no
// acquisition of new records starts once the bound is passed, until
// acknowledgements move the start.
func TestShareFetchTakesABatchWholePastMaxRecordLocks(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-batch", 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	values := make([]string, 2500)
	for i := range values {
		values[i] = "v"
	}
	tc.await(tc.serve(s, produceRequest(9, 1, "share-batch", 0, batchtest.Values(nowMs(), values...))))

	got := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", 0, 30000))))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 2499, DeliveryCount: 1}},
		got.AcquiredRecords, "a hundred asked: the batch whole, past 2000")
	tcb := newTestConn(t, s)
	waiting := tcb.serve(s, shareFetchReq(topic.ID, "b", 0, 30000))
	tcb.serve(s, produceRequest(9, 1, "share-batch", 0, batchtest.Values(nowMs(), "w")))
	_, answered := tcb.answer(waiting)
	require.False(t, answered, "2500 records in flight: nothing new for b")

	ack := tc.await(tc.serve(s, shareAckReq(topic.ID, "a", 1, 0, 2499, 1))).(*kmsg.ShareAcknowledgeResponse)
	require.Zero(t, ack.Topics[0].Partitions[0].ErrorCode)
	got = acquired(t, tcb.await(waiting))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 2500, LastOffset: 2500, DeliveryCount: 1}},
		got.AcquiredRecords, "the start moved: b gets the next batch")
}

// TestShareFetchAcksOfAForgottenPartition has a member acknowledge the
// record it holds in a share fetch that also forgets the partition, as
// kgo does for a partition it stopped fetching: Kafka's session adds the
// named partitions, then removes the forgotten ones, and applies the
// acknowledgements of every partition named. The release is applied and
// answered, nothing is acquired for the member, and another member gets
// the record, delivered a second time.
func TestShareFetchAcksOfAForgottenPartition(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-forget", 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	tc.await(tc.serve(s, produceRequest(9, 1, "share-forget", 0, batchtest.Values(nowMs(), "v"))))
	first := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", 0, 0))))
	require.Len(t, first.AcquiredRecords, 1)

	leave := shareFetchReq(topic.ID, "a", 1, 0,
		kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{2}})
	ft := kmsg.NewShareFetchRequestForgottenTopicsData()
	ft.TopicID, ft.Partitions = topic.ID, []int32{0}
	leave.ForgottenTopicsData = append(leave.ForgottenTopicsData, ft)
	got := acquired(t, tc.await(tc.serve(s, leave)))
	assert.Zero(t, got.AcknowledgeErrorCode, "the release is applied")
	assert.Empty(t, got.AcquiredRecords, "nothing fetched of a forgotten partition")

	again := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "b", 0, 0))))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 0, DeliveryCount: 2}},
		again.AcquiredRecords, "b gets the released record, second delivery")
}

// TestShareErrorsCarryNoLeaderHint: a share partition answered with an
// error that is not the leader's (here a topic id the broker does not
// know, on a fetch and on an acknowledgement) says current_leader -1 at
// epoch -1, no hint; left at zero it named broker 0, and kgo moved its
// share cursor there, to a broker that does not exist.
func TestShareErrorsCarryNoLeaderHint(t *testing.T) {
	s := newTestServer(t)
	tc := newTestConn(t, s)
	unknown := storage.TopicID{9, 9, 9}
	sf := tc.await(tc.serve(s, shareFetchReq(unknown, "a", 0, 0))).(*kmsg.ShareFetchResponse)
	require.Len(t, sf.Topics, 1)
	require.Len(t, sf.Topics[0].Partitions, 1)
	got := sf.Topics[0].Partitions[0]
	require.NotZero(t, got.ErrorCode)
	assert.Equal(t, int32(-1), got.CurrentLeader.LeaderID)
	assert.Equal(t, int32(-1), got.CurrentLeader.LeaderEpoch)
	assert.Empty(t, sf.NodeEndpoints)

	sa := tc.await(tc.serve(s, shareAckReq(unknown, "a", 1, 0, 0, 1))).(*kmsg.ShareAcknowledgeResponse)
	require.Len(t, sa.Topics, 1)
	require.Len(t, sa.Topics[0].Partitions, 1)
	p := sa.Topics[0].Partitions[0]
	require.NotZero(t, p.ErrorCode)
	assert.Equal(t, int32(-1), p.CurrentLeader.LeaderID)
	assert.Equal(t, int32(-1), p.CurrentLeader.LeaderEpoch)
}

// TestShareSessionEpochs checks the session rules: an epoch out of turn,
// a session never opened, acknowledgements in a fetch that opens one.
func TestShareSessionEpochs(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-epochs", 1)
	tc := newTestConn(t, s)
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.ShareFetchResponse).ErrorCode }
	assert.Equal(t, int16(122), code(tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", 3, 0)))), "SHARE_SESSION_NOT_FOUND")
	tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", 0, 0)))
	assert.Equal(t, int16(123), code(tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", 5, 0)))), "INVALID_SHARE_SESSION_EPOCH")
	assert.Zero(t, code(tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", 1, 0)))))
	assert.Zero(t, code(tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", -1, 0)))), "closes it")
	assert.Equal(t, int16(122), code(tc.await(tc.serve(s, shareFetchReq(topic.ID, "x", 2, 0)))), "closed")
}

// groupConfigReq sets one config of group's GROUP resource.
func groupConfigReq(group, name, value string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	return req
}

func TestGroupConfigs(t *testing.T) {
	s := newTestServer(t)
	tc := newTestConn(t, s)
	resp := tc.await(tc.serve(s, groupConfigReq("g", cfgShareLockDuration, "15000"))).(*kmsg.IncrementalAlterConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode)
	resp = tc.await(tc.serve(s, groupConfigReq("g", cfgShareLockDuration, "10"))).(*kmsg.IncrementalAlterConfigsResponse)
	assert.Equal(t, int16(40), resp.Resources[0].ErrorCode, "INVALID_CONFIG: below Kafka's minimum")
	resp = tc.await(tc.serve(s, groupConfigReq("g", "nope", "1"))).(*kmsg.IncrementalAlterConfigsResponse)
	assert.Equal(t, int16(40), resp.Resources[0].ErrorCode, "INVALID_CONFIG: no such group config")

	d := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	d.Resources = append(d.Resources, dr)
	got := map[string]string{}
	for _, c := range tc.await(tc.serve(s, d)).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[c.Name] = *c.Value
	}
	assert.Equal(t, map[string]string{cfgShareLockDuration: "15000", cfgShareAutoOffsetReset: "latest",
		cfgShareSessionTimeout: "45000", cfgShareHeartbeatInterval: "5000", cfgShareIsolationLevel: "read_uncommitted"}, got)
}

// TestShareGroupOffsetsAdmin sets a new group's start offset, reads it
// back, has its next fetch start there, and deletes the state.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-admin", 1)
	tc := newTestConn(t, s)
	for range 5 {
		tc.await(tc.serve(s, produceRequest(9, 1, "share-admin", 0, batchtest.Values(nowMs(), "v"))))
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "g"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "share-admin",
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 3}, {Partition: 9}}}}
	ar := tc.await(tc.serve(s, alter)).(*kmsg.AlterShareGroupOffsetsResponse)
	require.Zero(t, ar.ErrorCode, "a group that does not exist is made")
	assert.Zero(t, ar.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, int16(3), ar.Topics[0].Partitions[1].ErrorCode, "UNKNOWN_TOPIC_OR_PARTITION")

	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.SetVersion(1)
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}} // every partition it has
	dr := tc.await(tc.serve(s, describe)).(*kmsg.DescribeShareGroupOffsetsResponse)
	require.Len(t, dr.Groups, 1)
	require.Len(t, dr.Groups[0].Topics, 1)
	p := dr.Groups[0].Topics[0].Partitions[0]
	assert.Equal(t, int64(3), p.StartOffset)
	assert.Equal(t, int64(2), p.Lag, "offsets 3 and 4")

	got := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", 0, 0))))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 3, LastOffset: 4, DeliveryCount: 1}},
		got.AcquiredRecords, "the fetch starts at the offset set")

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "share-admin"}}
	delr := tc.await(tc.serve(s, del)).(*kmsg.DeleteShareGroupOffsetsResponse)
	require.Zero(t, delr.ErrorCode)
	assert.Zero(t, delr.Topics[0].ErrorCode)
	assert.Nil(t, s.share.parts.Get(share.Key{Group: "g", Topic: topic.ID, Partition: 0}), "forgotten")
}

// TestDeleteShareGroup has a member join a share group, which ListGroups
// shows as a share group, and deletes the group with its state once it
// has no member.
func TestDeleteShareGroup(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-delete", 1)
	tc := newTestConn(t, s)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", "member-1", []string{"share-delete"}
	joined := tc.await(tc.serve(s, hb)).(*kmsg.ShareGroupHeartbeatResponse)
	require.Zero(t, joined.ErrorCode)
	assert.Equal(t, int32(1), joined.MemberEpoch)
	require.NotNil(t, joined.Assignment)
	assert.Equal(t, []int32{0}, joined.Assignment.TopicPartitions[0].Partitions)
	tc.await(tc.serve(s, shareFetchReq(topic.ID, "member-1", 0, 0))) // makes the share partition

	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(5)
	list.TypesFilter = []string{"share"}
	listed := tc.await(tc.serve(s, list)).(*kmsg.ListGroupsResponse)
	require.Len(t, listed.Groups, 1, "ListGroups shows the share group")
	assert.Equal(t, "share", listed.Groups[0].GroupType)
	assert.Equal(t, "Stable", listed.Groups[0].GroupState)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	resp := tc.await(tc.serve(s, del)).(*kmsg.DeleteGroupsResponse)
	assert.Equal(t, int16(68), resp.Groups[0].ErrorCode, "NON_EMPTY_GROUP while it has a member")

	hb.MemberEpoch = -1
	left := tc.await(tc.serve(s, hb)).(*kmsg.ShareGroupHeartbeatResponse)
	require.Zero(t, left.ErrorCode)
	resp = tc.await(tc.serve(s, del)).(*kmsg.DeleteGroupsResponse)
	assert.Zero(t, resp.Groups[0].ErrorCode)
	assert.Nil(t, s.share.parts.Get(share.Key{Group: "g", Topic: topic.ID, Partition: 0}), "its state went with it")
	assert.False(t, s.share.groups.Exists("g"))
}

// TestShareGroupIDsAreTheGroupsKeyspace checks that a classic group's id
// is no share group's: a heartbeat to it, and its description as a share
// group, are GROUP_ID_NOT_FOUND with Kafka's message.
func TestShareGroupIDsAreTheGroupsKeyspace(t *testing.T) {
	s := newTestServer(t)
	tc := newTestConn(t, s)
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(4)
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "classic", "consumer", 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	first := tc.await(tc.serve(s, join)).(*kmsg.JoinGroupResponse) // MEMBER_ID_REQUIRED, with the id to join with
	join.MemberID = first.MemberID
	joined := tc.await(tc.serve(s, join)).(*kmsg.JoinGroupResponse)
	require.Zero(t, joined.ErrorCode)

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "classic", "m", []string{"t"}
	resp := tc.await(tc.serve(s, hb)).(*kmsg.ShareGroupHeartbeatResponse)
	assert.Equal(t, int16(69), resp.ErrorCode, "GROUP_ID_NOT_FOUND")

	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"classic", "absent"}
	described := tc.await(tc.serve(s, d)).(*kmsg.ShareGroupDescribeResponse)
	require.Len(t, described.Groups, 2)
	assert.Equal(t, "Group classic is not a share group.", *described.Groups[0].ErrorMessage)
	assert.Equal(t, "Group absent not found.", *described.Groups[1].ErrorMessage)
}
