package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// txnCommitReq is producer's TxnOffsetCommit at version v of offset and
// offset+1 to partitions 0 and 1 of "orders", without a member.
func txnCommitReq(v int16, group string, producer, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(v)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, producer, 0
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = "orders"
	for p := range int32(2) {
		pp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch, pp.Metadata = p, offset+int64(p), 3, kmsg.StringPtr("txn")
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{t}
	return req
}

func txnCommitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetchStableCodes fetches group's offsets of partitions 0 and 1 of
// "orders" with require_stable at version v (7 or 8), and returns each
// partition's offset and error code.
func fetchStableCodes(t *testing.T, c *rawConn, v int16, group string) ([]int64, []int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	req.RequireStable = true
	var offsets []int64
	var codes []int16
	add := func(offset int64, code int16) {
		offsets, codes = append(offsets, offset), append(codes, code)
	}
	if v >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp := c.RoundTrip(req).(*kmsg.OffsetFetchResponse)
		require.Len(t, resp.Groups, 1)
		assert.Equal(t, int16(0), resp.Groups[0].ErrorCode, "never an error of the group, as Kafka answers")
		for _, rt := range resp.Groups[0].Topics {
			for _, p := range rt.Partitions {
				add(p.Offset, p.ErrorCode)
			}
		}
		return offsets, codes
	}
	req.Group, req.Topics = group, []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
	resp := c.RoundTrip(req).(*kmsg.OffsetFetchResponse)
	assert.Equal(t, int16(0), resp.ErrorCode, "never an error of the group, as Kafka answers")
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			add(p.Offset, p.ErrorCode)
		}
	}
	return offsets, codes
}

// anyGroup stands for the broker's one offsets partition.
func anyGroup(string) bool { return true }

// endTxn ends producer's transaction in the offsets partition p as
// WriteTxnMarkers does: it appends the marker, then hands it to the group
// coordinator.
func endTxn(t *testing.T, s *Server, p *storage.Partition, producer int64, commit bool) {
	t.Helper()
	_, err := p.AppendMarker(storage.Marker{ProducerID: producer, Commit: commit})
	require.NoError(t, err)
	s.groups.CompleteTxn(anyGroup, producer, commit)
}

// TestTxnOffsetCommitVersions: each version's offsets, v5's aside
// (txn_v2_test.go), are appended as
// the producer's transactional batch and are pending until the
// transaction's marker (CompleteTxn, which WriteTxnMarkers calls once the
// marker is appended): OffsetFetch returns the committed offsets
// meanwhile, and UNSTABLE_OFFSET_COMMIT per partition with require_stable
// (v7, and v8's groups); after a commit marker, the transaction's offsets.
func TestTxnOffsetCommitVersions(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	committed := []int64{-1, -1}
	for v := int16(0); v <= 4; v++ {
		producer, offset := 1000+int64(v), 100*int64(v+1)
		require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(v, "txn", producer, offset))), "v%d", v)
		assert.Equal(t, committed, fetchOffsets(t, c, 6, "txn", "orders", 0, 1), "v%d: pending, not visible", v)
		unstable := kerr.UnstableOffsetCommit.Code
		for _, fv := range []int16{7, 8} {
			offsets, codes := fetchStableCodes(t, c, fv, "txn")
			assert.Equal(t, []int16{unstable, unstable}, codes, "commit v%d, fetch v%d", v, fv)
			assert.Equal(t, []int64{-1, -1}, offsets, "commit v%d, fetch v%d", v, fv)
		}
		first, _, open := p.OngoingTxn(producer)
		require.True(t, open, "v%d: a transaction of the producer's is open in the offsets partition", v)
		require.Positive(t, first)
		endTxn(t, s, p, producer, true)
		committed = []int64{offset, offset + 1}
		offsets, codes := fetchStableCodes(t, c, 7, "txn")
		assert.Equal(t, []int16{0, 0}, codes, "v%d: stable once committed", v)
		assert.Equal(t, committed, offsets, "v%d", v)
	}

	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(5)
	f.Group, f.Topics = "txn", []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
	fp := c.RoundTrip(f).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	assert.Equal(t, int32(3), fp.LeaderEpoch, "committed with the leader epoch from v2")
	require.NotNil(t, fp.Metadata)
	assert.Equal(t, "txn", *fp.Metadata)

	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "txn", 2000, 9))))
	endTxn(t, s, p, 2000, false)
	assert.Equal(t, committed, fetchOffsets(t, c, 8, "txn", "orders", 0, 1), "an aborted transaction's are dropped")
}

// TestTxnOffsetsAreLoadedPending: an offsets partition loaded again (as
// on a new leader) while a transaction is open brings its offsets back
// pending, and the marker written after the load completes them; loaded
// again after the markers, it replays them: the committed transaction's
// offsets are there, the aborted one's are not.
func TestTxnOffsetsAreLoadedPending(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "g", 77, 10))))
	reloadOffsets(t, s, nil)
	assert.Equal(t, []int64{1, 2}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "the committed offsets")
	unstable := kerr.UnstableOffsetCommit.Code
	_, codes := fetchStableCodes(t, c, 8, "g")
	assert.Equal(t, []int16{unstable, unstable}, codes)
	endTxn(t, s, p, 77, true)
	assert.Equal(t, []int64{10, 11}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))

	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "g", 78, 20))))
	endTxn(t, s, p, 78, false)
	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "g", 79, 30))))
	reloadOffsets(t, s, nil)
	assert.Equal(t, []int64{10, 11}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "77 committed, 78 aborted")
	_, codes = fetchStableCodes(t, c, 8, "g")
	assert.Equal(t, []int16{unstable, unstable}, codes, "79 is still open")
}

// TestTxnOffsetCommitRefusals: v3's member and generation are checked
// (KIP-447); a partition that does not exist, a group id that is empty
// and a coordinator still loading the group's partition are refused as
// Kafka refuses them, the last COORDINATOR_NOT_AVAILABLE before v2.
func TestTxnOffsetCommitRefusals(t *testing.T) {
	s, c, _ := newOffsetsServer(t)
	j := c.stable("members")

	stale := txnCommitReq(3, "members", 5, 1)
	stale.MemberID, stale.Generation = j.MemberID, j.Generation+1
	code := kerr.IllegalGeneration.Code
	assert.Equal(t, []int16{code, code}, txnCommitCodes(c.RoundTrip(stale)))
	unknown := txnCommitReq(3, "members", 5, 1)
	unknown.MemberID, unknown.Generation = "who", j.Generation
	code = kerr.UnknownMemberID.Code
	assert.Equal(t, []int16{code, code}, txnCommitCodes(c.RoundTrip(unknown)))
	code = kerr.InvalidGroupID.Code
	assert.Equal(t, []int16{code, code}, txnCommitCodes(c.RoundTrip(txnCommitReq(3, "", 5, 1))))

	s.topicExists = func(topic string, partition int32) bool { return topic == "orders" && partition == 0 }
	missing := txnCommitReq(3, "members", 5, 1)
	missing.MemberID, missing.Generation = j.MemberID, j.Generation+1
	assert.Equal(t, []int16{kerr.IllegalGeneration.Code, kerr.UnknownTopicOrPartition.Code}, txnCommitCodes(c.RoundTrip(missing)))

	reloadOffsets(t, s, func() {
		for v, want := range map[int16]*kerr.Error{1: kerr.CoordinatorNotAvailable, 2: kerr.CoordinatorLoadInProgress} {
			assert.Equal(t, []int16{want.Code, want.Code}, txnCommitCodes(c.RoundTrip(txnCommitReq(v, "g", 5, 1))), "v%d", v)
		}
	})
}
