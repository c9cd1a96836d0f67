package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// TestShareIsolationLevel: a share group whose share.isolation.level is
// read_committed acquires nothing at or past the last stable offset, and
// archives the records of aborted transactions rather than deliver them
// (Kafka's SharePartition under FetchIsolation.TXN_COMMITTED); the
// transaction's abort marker is acquired as any record of the log is. A
// group reading uncommitted (the default) gets every record below the
// high watermark.
func TestShareIsolationLevel(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-txn", 1)
	p := topic.Partitions[0]
	tc := newTestConn(t, s)
	for _, g := range []string{"g", "u"} {
		tc.await(tc.serve(s, groupConfigReq(g, cfgShareAutoOffsetReset, "earliest")))
	}
	resp := tc.await(tc.serve(s, groupConfigReq("g", cfgShareIsolationLevel, "read_committed"))).(*kmsg.IncrementalAlterConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode)

	ts := nowMs()
	appendRaw := func(raw []byte) {
		t.Helper()
		_, err := p.Append(raw)
		require.NoError(t, err)
	}
	appendRaw(batchtest.Values(ts, "a"))                                   // 0
	appendRaw(batchtest.Transactional(7, 0, 0, ts, "b", "c"))              // 1-2, aborted
	_, err := p.AppendMarker(storage.Marker{ProducerID: 7, Commit: false}) // 3
	require.NoError(t, err)
	appendRaw(batchtest.Transactional(8, 0, 0, ts, "d")) // 4, open: the last stable offset
	appendRaw(batchtest.Values(ts, "e"))                 // 5

	fetch := func(group string, epoch int32) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		req := shareFetchReq(topic.ID, "m", epoch, 0)
		req.GroupID = kmsg.StringPtr(group)
		return acquired(t, tc.await(tc.serve(s, req))).AcquiredRecords
	}
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 0, DeliveryCount: 1},
		{FirstOffset: 3, LastOffset: 3, DeliveryCount: 1}}, fetch("g", 0),
		"read_committed: below the last stable offset, 4, the aborted records left out")
	sp := s.share.parts.Get(share.Key{Group: "g", Topic: topic.ID, Partition: 0})
	require.NotNil(t, sp)
	for _, off := range []int64{1, 2} {
		st, _ := sp.StateOf(off)
		assert.Equal(t, share.Archived, st, "offset %d, of the aborted transaction, is archived", off)
	}
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 5, DeliveryCount: 1}},
		fetch("u", 0), "read_uncommitted: every record below the high watermark")

	_, err = p.AppendMarker(storage.Marker{ProducerID: 8, Commit: true}) // 6
	require.NoError(t, err)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 4, LastOffset: 6, DeliveryCount: 1}},
		fetch("g", 1), "committed: the transaction's record, the one after it and the marker")
}

// TestCutRanges: an aborted batch's offsets leave the acquired runs
// whole, cut at an end, or split in two; runs it does not overlap stay.
func TestCutRanges(t *testing.T) {
	tests := []struct {
		name              string
		ranges            []share.Range
		first, last       int64
		wantKept, wantCut []share.Range
	}{
		{"none overlapped", []share.Range{{First: 0, Last: 3, DeliveryCount: 1}}, 5, 9,
			[]share.Range{{First: 0, Last: 3, DeliveryCount: 1}}, nil},
		{"whole", []share.Range{{First: 2, Last: 3, DeliveryCount: 1}}, 0, 9,
			[]share.Range{}, []share.Range{{First: 2, Last: 3, DeliveryCount: 1}}},
		{"split", []share.Range{{First: 0, Last: 9, DeliveryCount: 2}}, 3, 5,
			[]share.Range{{First: 0, Last: 2, DeliveryCount: 2}, {First: 6, Last: 9, DeliveryCount: 2}},
			[]share.Range{{First: 3, Last: 5, DeliveryCount: 2}}},
		{"across two runs", []share.Range{{First: 0, Last: 4, DeliveryCount: 2}, {First: 5, Last: 9, DeliveryCount: 1}}, 3, 6,
			[]share.Range{{First: 0, Last: 2, DeliveryCount: 2}, {First: 7, Last: 9, DeliveryCount: 1}},
			[]share.Range{{First: 3, Last: 4, DeliveryCount: 2}, {First: 5, Last: 6, DeliveryCount: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, cut := cutRanges(tt.ranges, tt.first, tt.last)
			assert.Equal(t, tt.wantKept, kept, "kept")
			assert.Equal(t, tt.wantCut, cut, "cut")
		})
	}
}
