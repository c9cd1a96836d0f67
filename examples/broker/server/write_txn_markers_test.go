package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeMarkersReq is a WriteTxnMarkers request ending producer's
// transaction in partition 0 of topic.
func writeMarkersReq(topic string, producer int64, commit bool) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.Committed = producer, commit
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, rt)
	req.Markers = append(req.Markers, m)
	return req
}

func markerCode(t *testing.T, resp kmsg.Response) int16 {
	t.Helper()
	r := resp.(*kmsg.WriteTxnMarkersResponse)
	require.Len(t, r.Markers, 1)
	require.Len(t, r.Markers[0].Topics, 1)
	require.Len(t, r.Markers[0].Topics[0].Partitions, 1)
	return r.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// TestWriteTxnMarkersCompletesTxnOffsets: a commit marker written to an
// offsets partition by WriteTxnMarkers makes the producer's pending
// transactional offsets the group's committed ones; one for a partition
// that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersCompletesTxnOffsets(t *testing.T) {
	_, c, p := newOffsetsServer(t)
	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "g", 55, 40))))
	assert.Equal(t, []int64{1, 2}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "pending")

	assert.Equal(t, int16(0), markerCode(t, c.RoundTrip(writeMarkersReq(offsetsTopic, 55, true))))
	assert.Equal(t, []int64{40, 41}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "committed by the marker")
	_, _, open := p.OngoingTxn(55)
	assert.False(t, open, "the marker closed the transaction in the offsets partition")

	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, markerCode(t, c.RoundTrip(writeMarkersReq("nowhere", 55, true))))
}

// TestWriteTxnMarkersWaitsForTheOffsetsLoad: a marker for an offsets
// partition this broker leads but has not loaded yet is refused
// COORDINATOR_LOAD_IN_PROGRESS and not appended, so that it cannot land
// between the load's replay and the groups it hands over (the group
// coordinator would never see it); its coordinator retries, and the
// marker written once the partition is loaded completes the offsets.
func TestWriteTxnMarkersWaitsForTheOffsetsLoad(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "g", 66, 50))))
	before, err := p.Offsets()
	require.NoError(t, err)
	reloadOffsets(t, s, func() {
		assert.Equal(t, kerr.CoordinatorLoadInProgress.Code, markerCode(t, c.RoundTrip(writeMarkersReq(offsetsTopic, 66, true))))
		after, err := p.Offsets()
		require.NoError(t, err)
		assert.Equal(t, before.LogEnd, after.LogEnd, "nothing appended while loading")
	})
	assert.Equal(t, int16(0), markerCode(t, c.RoundTrip(writeMarkersReq(offsetsTopic, 66, true))))
	assert.Equal(t, []int64{50, 51}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
}
