package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
)

// endTxnV5 ends txnID's transaction with EndTxn v5 and returns the answer.
func endTxnV5(c *rawConn, txnID string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(5)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, commit
	return c.RoundTrip(req).(*kmsg.EndTxnResponse)
}

// TestApiVersionsAdvertisesTransactionVersion: the transaction.version
// feature, supported 0-2 and finalized at the broker's level, which kgo
// reads to run transaction version 2 (with Produce v12+, EndTxn v5+,
// TxnOffsetCommit v5+).
func TestApiVersionsAdvertisesTransactionVersion(t *testing.T) {
	for _, level := range []int16{1, 2} {
		s := newTestServer(t, func(c *Config) { c.TransactionVersion = level })
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := dialRaw(t, s).RoundTrip(req).(*kmsg.ApiVersionsResponse)
		require.Len(t, resp.SupportedFeatures, 1)
		assert.Equal(t, "transaction.version", resp.SupportedFeatures[0].Name)
		assert.Equal(t, int16(2), resp.SupportedFeatures[0].MaxVersion)
		require.Len(t, resp.FinalizedFeatures, 1)
		assert.Equal(t, level, resp.FinalizedFeatures[0].MaxVersionLevel, "level %d", level)
		assert.NotEqual(t, int64(-1), resp.FinalizedFeaturesEpoch, "kgo ignores the features at epoch -1")
		max := make(map[int16]int16)
		for _, k := range resp.ApiKeys {
			max[k.ApiKey] = k.MaxVersion
		}
		assert.GreaterOrEqual(t, max[int16(kmsg.Produce)], int16(12))
		assert.GreaterOrEqual(t, max[int16(kmsg.EndTxn)], int16(5))
		assert.GreaterOrEqual(t, max[int16(kmsg.TxnOffsetCommit)], int16(5))
	}
}

// TestProduceV12AddsThePartition: KIP-890 part 2. A Produce v12 adds its
// partition to the producer's transaction at the coordinator before it
// appends (no AddPartitionsToTxn), where v11 is still verified, and
// refused TRANSACTION_ABORTABLE; EndTxn v5 bumps the epoch, the marker carries it,
// and the next transaction produces at it from sequence 0, while the old
// epoch is stale.
func TestProduceV12AddsThePartition(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "orders", 1)
	c := dialRaw(t, s)
	pid, epoch := initTxnProducer(t, c, "implicit")

	assert.Equal(t, kerr.TransactionAbortable.Code, txnProduceCodeAt(c, 11, "implicit", "orders", pid, epoch, 0),
		"v11: verified, and not in the transaction")
	require.Equal(t, int16(0), txnProduceCodeAt(c, 12, "implicit", "orders", pid, epoch, 0), "v12: added, appended")
	require.Equal(t, int16(0), txnProduceCodeAt(c, 12, "implicit", "orders", pid, epoch, 1))
	p, err := s.data.store.Partition("orders", 0)
	require.NoError(t, err)
	first, _, open := p.OngoingTxn(pid)
	require.True(t, open)
	assert.Equal(t, int64(0), first)
	d := s.txns.Describe([]string{"implicit"})[0]
	assert.Equal(t, "Ongoing", d.State.String())
	require.Len(t, d.Partitions, 1, "the produce added its partition")

	resp := endTxnV5(c, "implicit", pid, epoch, true)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, pid, resp.ProducerID)
	assert.Equal(t, epoch+1, resp.ProducerEpoch, "every end bumps the epoch")
	retry := endTxnV5(c, "implicit", pid, epoch, true)
	if retry.ErrorCode == 0 { // CONCURRENT_TRANSACTIONS while the marker is written
		assert.Equal(t, epoch+1, retry.ProducerEpoch, "a retry is answered what the end gave")
	}

	// The next transaction, at the bumped epoch: its add waits for the
	// previous one to complete (transaction.completion.wait.ms).
	assert.Equal(t, int16(0), txnProduceCodeAt(c, 12, "implicit", "orders", pid, epoch+1, 0))
	states := p.Producers()
	require.Len(t, states, 1)
	assert.Equal(t, epoch+1, states[0].ProducerEpoch)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, txnProduceCodeAt(c, 12, "implicit", "orders", pid, epoch, 2),
		"a late batch of the ended transaction")

	abort := endTxnV5(c, "implicit", pid, epoch+1, false)
	require.Equal(t, int16(0), abort.ErrorCode)
	assert.Equal(t, epoch+2, abort.ProducerEpoch)
	require.Eventually(t, func() bool {
		_, _, open := p.OngoingTxn(pid)
		return !open
	}, 10*time.Second, 5*time.Millisecond, "the abort's marker ends it")
	empty := endTxnV5(c, "implicit", pid, epoch+2, false)
	require.Equal(t, int16(0), empty.ErrorCode, "an empty transaction's abort")
	assert.Equal(t, epoch+3, empty.ProducerEpoch)
}

// TestTxnOffsetCommitV5AddsTheGroup: KIP-890 part 2. A TxnOffsetCommit
// v5 adds the group's __consumer_offsets partition to the transaction
// itself (no AddOffsetsToTxn); the offsets are pending until EndTxn v5's
// marker, then committed.
func TestTxnOffsetCommitV5AddsTheGroup(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	pid, epoch := initTxnProducer(t, c, "tx")
	req := txnCommitReq(5, "txn5", pid, 40)
	req.ProducerEpoch = epoch
	require.Equal(t, []int16{0, 0}, txnCommitCodes(c.RoundTrip(req)))
	_, _, open := p.OngoingTxn(pid)
	require.True(t, open, "the producer's offsets are pending in the offsets partition")
	d := s.txns.Describe([]string{"tx"})[0]
	require.Len(t, d.Partitions, 1)
	assert.Equal(t, offsetsTopic, d.Partitions[0].Topic, "the group's partition was added")

	stale := txnCommitReq(5, "txn5", pid, 50)
	stale.ProducerEpoch = epoch - 1
	assert.Equal(t, []int16{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code}, txnCommitCodes(c.RoundTrip(stale)))
	other := txnCommitReq(5, "txn5", pid+100, 50)
	assert.Equal(t, []int16{kerr.InvalidProducerIDMapping.Code, kerr.InvalidProducerIDMapping.Code},
		txnCommitCodes(c.RoundTrip(other)))

	resp := endTxnV5(c, "tx", pid, epoch, true)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, epoch+1, resp.ProducerEpoch)
	require.Eventually(t, func() bool {
		offsets, codes := fetchStableCodes(t, c, 7, "txn5")
		return codes[0] == 0 && offsets[0] == 40
	}, 10*time.Second, 5*time.Millisecond, "committed by the marker")
}

// TestTxnOffsetCommitV5AfterAnAbortMarker: the race between a
// TxnOffsetCommit v5's implicit add and its offsets' append. The
// transaction's abort (its timeout's, at the bumped epoch, written as
// the coordinator's markerWriter writes it) lands in the group's offsets
// partition after the add began and before the offsets are appended
// (here while the add's write waits for replication, which puts it there
// deterministically). The append is refused INVALID_PRODUCER_EPOCH, as
// Kafka answers since KAFKA-19690 (the producer's epoch is checked before
// the verification guard; 4.0 answered INVALID_TXN_STATE): the offsets
// are not left pending, and no transaction of the producer is left open
// in the offsets partition, holding its last stable offset back until
// the producer's next marker.
func TestTxnOffsetCommitV5AfterAnAbortMarker(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	pid, epoch := initTxnProducer(t, c, "tx")
	mt, err := s.image().Topic(coordinator.TransactionTopic)
	require.NoError(t, err)
	state, err := s.data.store.Partition(coordinator.TransactionTopic, coordinator.PartitionFor("tx", len(mt.Partitions)))
	require.NoError(t, err)
	state.SetHighWatermarkManaged(true) // the add's write waits for its replication

	tc := newTestConn(t, s)
	req := txnCommitReq(5, "race", pid, 40)
	req.ProducerEpoch = epoch
	r := tc.request(req)
	s.handleTxnOffsetCommit(r)
	_, answered := tc.answer(r)
	require.False(t, answered, "the add waits for its write")

	done := make(chan map[txn.TopicPartition]error, 1)
	tp := s.txns.OffsetsPartition("race")
	s.appendMarkers(context.Background(), txn.Marker{ProducerID: pid, ProducerEpoch: epoch + 1, Commit: false},
		[]txn.TopicPartition{tp}, func(res map[txn.TopicPartition]error) { done <- res })
	require.NoError(t, (<-done)[tp], "the abort's marker is written")

	o, err := state.Offsets()
	require.NoError(t, err)
	state.AdvanceHighWatermark(o.LogEnd) // the add is replicated: the coordinator answers it
	s.replicas.Wake(state)
	stale := kerr.InvalidProducerEpoch.Code
	assert.Equal(t, []int16{stale, stale}, txnCommitCodes(tc.await(r)), "appended after the abort's marker")
	d := s.txns.Describe([]string{"tx"})[0]
	require.Equal(t, "Ongoing", d.State.String(), "the add itself was taken: the append refused the offsets")
	require.Len(t, d.Partitions, 1)
	assert.Equal(t, tp.Topic, d.Partitions[0].Topic)
	o2, err := p.Offsets()
	require.NoError(t, err)
	_, _, open := p.OngoingTxn(pid)
	assert.False(t, open, "no transaction of the producer's is left open in the offsets partition")
	assert.Equal(t, o2.LogEnd, o2.LastStable, "nothing holds the offsets partition's last stable offset back")
	offsets, codes := fetchStableCodes(t, c, 7, "race")
	assert.Equal(t, []int16{0, 0}, codes, "nothing pending")
	assert.Equal(t, []int64{-1, -1}, offsets, "nothing committed")
}
