package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	after := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "b", 0, 30000))))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 2, LastOffset: 4, DeliveryCount: 2}},
		after.AcquiredRecords, "after the restart: the unacknowledged records, delivered a second time; none skipped, none acknowledged")
}
