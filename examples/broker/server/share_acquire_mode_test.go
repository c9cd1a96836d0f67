package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestShareFetchAcquireModes: a ShareFetch v2 in KIP-1206's record_limit
// mode (ShareAcquireMode 1, kgo's ShareMaxRecordsStrict) acquires
// max_records records exactly from a batch of more, the batch still
// answered whole; the next one goes on where it stopped; batch_optimized
// (0, the default) takes the rest of the batch for one record asked.
func TestShareFetchAcquireModes(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-modes", 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	tc.await(tc.serve(s, produceRequest(9, 1, "share-modes", 0,
		batchtest.Values(nowMs(), "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"))))

	fetch := func(member string, mode int8, maxRecords int32) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		req := shareFetchReq(topic.ID, member, 0, 0)
		req.ShareAcquireMode, req.MaxRecords = mode, maxRecords
		return acquired(t, tc.await(tc.serve(s, req)))
	}
	got := fetch("a", 1, 3)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 2, DeliveryCount: 1}},
		got.AcquiredRecords, "record_limit: three of the batch's ten")
	assert.NotEmpty(t, got.Records, "the batch that holds them is answered")
	got = fetch("b", 1, 4)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 3, LastOffset: 6, DeliveryCount: 1}},
		got.AcquiredRecords, "record_limit: the next four")
	got = fetch("c", 0, 1)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 7, LastOffset: 9, DeliveryCount: 1}},
		got.AcquiredRecords, "batch_optimized: to the batch's end")
}

// TestShareFetchRefusesAnUnknownAcquireMode: a ShareAcquireMode that is
// neither batch_optimized nor record_limit is INVALID_REQUEST for the
// request, and acquires nothing.
func TestShareFetchRefusesAnUnknownAcquireMode(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-mode-bad", 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	tc.await(tc.serve(s, produceRequest(9, 1, "share-mode-bad", 0, batchtest.Values(nowMs(), "v"))))
	for _, mode := range []int8{2, -1} {
		req := shareFetchReq(topic.ID, "a", 0, 0)
		req.ShareAcquireMode = mode
		resp := tc.await(tc.serve(s, req)).(*kmsg.ShareFetchResponse)
		assert.Equal(t, int16(42), resp.ErrorCode, "mode %d: INVALID_REQUEST", mode)
		assert.Empty(t, resp.Topics, "mode %d: nothing fetched", mode)
	}
	got := acquired(t, tc.await(tc.serve(s, shareFetchReq(topic.ID, "a", 0, 0))))
	require.Len(t, got.AcquiredRecords, 1, "the record was left for a valid fetch")
}
