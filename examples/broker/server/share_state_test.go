package server

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestShareStateSurvivesRestart has a share group acknowledge part of
// what it acquired, then restarts the broker on its log.dirs: the group
// goes on from the share coordinator's state in __share_group_state. The
// acknowledged records are not delivered again, those acquired but not
// acknowledged come back with their delivery counts, and with the default
// share.auto.offset.reset (latest) nothing is skipped.
func TestShareStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	withDir := func(c *Config) { c.LogDirs = dir }
	s := newTestServer(t, withDir)
	topic := createTopic(t, s, "share-restart", 1)
	tc := newTestConn(t, s)

	// The first fetch makes the share partition at the log's end, 0.
	waiting := tc.serve(s, shareFetchReq(topic.ID, "a", 0, 30000))
	for range 5 {
		tc.await(tc.serve(s, produceRequest(9, 1, "share-restart", 0, batchtest.Values(nowMs(), "v"))))
	}
	got := acquired(t, tc.await(waiting))
	var n int64
	for _, rg := range got.AcquiredRecords {
		n += rg.LastOffset - rg.FirstOffset + 1
	}
	epoch := int32(1)
	if n < 5 { // an append completed the fetch early: the rest now
		more := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", epoch, 30000))))
		require.Equal(t, int64(4), more.AcquiredRecords[len(more.AcquiredRecords)-1].LastOffset)
		epoch++
	}
	ack := tc.await(tc.serve(s, shareAckReq(topic.ID, "a", epoch, 0, 1, 1))).(*kmsg.ShareAcknowledgeResponse)
	require.Zero(t, ack.ErrorCode)
	require.Zero(t, ack.Topics[0].Partitions[0].ErrorCode, "answered once durable")

	// The coordinator's own view (ReadShareGroupStateSummary, as a broker
	// asks it).
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = "g"
	sum.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: topic.ID,
		Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	sr := tc.await(tc.serve(s, sum)).(*kmsg.ReadShareGroupStateSummaryResponse)
	require.Zero(t, sr.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, int64(2), sr.Topics[0].Partitions[0].StartOffset, "the acknowledged head is done with")
	require.NoError(t, s.Close(context.Background()))

	s = newTestServer(t, withDir)
	tc = newTestConn(t, s)
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.SetVersion(1)
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g",
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "share-restart", Partitions: []int32{0}}}}}
	dr := tc.await(tc.serve(s, describe)).(*kmsg.DescribeShareGroupOffsetsResponse)
	assert.Equal(t, int64(2), dr.Groups[0].Topics[0].Partitions[0].StartOffset,
		"described from the share coordinator before any share fetch")
	after := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "b", 0, 30000))))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 2, LastOffset: 4, DeliveryCount: 2}},
		after.AcquiredRecords, "after the restart: the unacknowledged records, delivered a second time; none skipped, none acknowledged")
}

// TestShareStateRPCsFence serves the share coordinator's RPCs as another
// broker sends them: a write by an older leader, or at an older state
// epoch, is fenced; a read by a newer leader stores its epoch.
func TestShareStateRPCsFence(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-rpc", 1)
	tc := newTestConn(t, s)
	code := func(resp kmsg.Response) int16 {
		switch r := resp.(type) {
		case *kmsg.InitializeShareGroupStateResponse:
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.ReadShareGroupStateResponse:
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.WriteShareGroupStateResponse:
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.DeleteShareGroupStateResponse:
			return r.Topics[0].Partitions[0].ErrorCode
		}
		t.Fatalf("%T", resp)
		return 0
	}
	// Until the topic is created and its partition loaded, the key is
	// COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS.
	initReq := kmsg.NewPtrInitializeShareGroupStateRequest()
	initReq.GroupID = "g"
	initReq.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: topic.ID,
		Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, StartOffset: 7}}}}
	require.Eventually(t, func() bool { return code(tc.await(tc.serve(s, initReq))) == 0 },
		10*time.Second, 10*time.Millisecond, "initialized once the coordinator is loaded")

	read := func(leaderEpoch int32) *kmsg.ReadShareGroupStateResponse {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "g"
		req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: topic.ID,
			Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: leaderEpoch}}}}
		return tc.await(tc.serve(s, req)).(*kmsg.ReadShareGroupStateResponse)
	}
	write := func(stateEpoch, leaderEpoch int32) int16 {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "g"
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = 0, stateEpoch, leaderEpoch, 9
		p.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: 9, LastOffset: 10, DeliveryState: 1, DeliveryCount: 3}}
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topic.ID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
		return code(tc.await(tc.serve(s, req)))
	}
	got := read(5)
	require.Zero(t, code(got))
	assert.Equal(t, int64(7), got.Topics[0].Partitions[0].StartOffset)
	assert.Equal(t, kerr.FencedLeaderEpoch.Code, code(read(4)), "a read by an older leader")
	assert.Equal(t, kerr.FencedLeaderEpoch.Code, write(1, 4), "a write by an older leader")
	assert.Equal(t, kerr.FencedStateEpoch.Code, write(0, 5), "a write at an older state epoch")
	require.Zero(t, write(1, 5))
	got = read(5)
	assert.Equal(t, []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{{FirstOffset: 9, LastOffset: 10, DeliveryState: 1, DeliveryCount: 3}},
		got.Topics[0].Partitions[0].StateBatches)

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topic.ID,
		Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	require.Zero(t, code(tc.await(tc.serve(s, del))))
	assert.Equal(t, int64(-1), read(5).Topics[0].Partitions[0].StartOffset, "deleted: never initialized")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(6)
	fc.CoordinatorType = 2
	fc.CoordinatorKeys = []string{"g:" + base64.RawURLEncoding.EncodeToString(topic.ID[:]) + ":0"}
	fr := tc.await(tc.serve(s, fc)).(*kmsg.FindCoordinatorResponse)
	require.Len(t, fr.Coordinators, 1)
	assert.Zero(t, fr.Coordinators[0].ErrorCode, "a SHARE key is found")
	assert.Equal(t, s.cfg.NodeID, fr.Coordinators[0].NodeID)
}
