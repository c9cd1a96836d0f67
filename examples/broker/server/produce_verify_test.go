package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// initTxnProducer gives txnID its producer id and epoch, once the
// transaction coordinator has loaded its partition.
func initTxnProducer(t *testing.T, c *rawConn, txnID string) (int64, int16) {
	t.Helper()
	var resp *kmsg.InitProducerIDResponse
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp = c.RoundTrip(req).(*kmsg.InitProducerIDResponse)
		return resp.ErrorCode == 0
	}, 10*time.Second, 10*time.Millisecond)
	return resp.ProducerID, resp.ProducerEpoch
}

// txnProduceCode produces a transactional batch of pid at epoch, sequence
// seq, to partition 0 of topic, with Produce v9, and returns its error
// code.
func txnProduceCode(c *rawConn, txnID, topic string, pid int64, epoch int16, seq int32) int16 {
	return txnProduceCodeAt(c, 9, txnID, topic, pid, epoch, seq)
}

// txnProduceCodeAt is txnProduceCode with Produce version v (up to 12:
// by topic name).
func txnProduceCodeAt(c *rawConn, v int16, txnID, topic string, pid int64, epoch int16, seq int32) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(txnID), -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batchtest.Transactional(pid, epoch, seq, time.Now().UnixMilli(), "v")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.RoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestTransactionalProduceIsVerified: KIP-890 part 1. A transactional
// batch that would open a transaction in a partition its coordinator was
// not told of (AddPartitionsToTxn) is refused INVALID_TXN_STATE and not
// appended, so that no transaction is left hanging open there, holding the
// last stable offset back for ever; once added, it is appended, and the
// transaction's next batches there need no check.
func TestTransactionalProduceIsVerified(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "orders", 1)
	c := dialRaw(t, s)
	pid, epoch := initTxnProducer(t, c, "verified")

	assert.Equal(t, kerr.InvalidTxnState.Code, txnProduceCode(c, "verified", "orders", pid, epoch, 0),
		"a partition not in the transaction")
	p, err := s.data.store.Partition("orders", 0)
	require.NoError(t, err)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.LogEnd, "nothing appended")

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "verified", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
	require.Equal(t, int16(0), c.RoundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode)

	assert.Equal(t, int16(0), txnProduceCode(c, "verified", "orders", pid, epoch, 0), "added: appended")
	assert.Equal(t, int16(0), txnProduceCode(c, "verified", "orders", pid, epoch, 1), "the open transaction goes on")
	first, _, open := p.OngoingTxn(pid)
	assert.True(t, open)
	assert.Equal(t, int64(0), first)
}

// TestVerificationAnswersTransactionAbortable: KIP-890's error for a
// partition not in the transaction. The coordinator answers a leader's
// check (AddPartitionsToTxn v4+ with verify_only) TRANSACTION_ABORTABLE,
// as Kafka 3.8+ does, and the leader hands it on to a Produce v11, whose
// client knows it (the producer aborts and goes on), and INVALID_TXN_STATE
// to v10 and below, as Kafka's AddPartitionsToTxnManager maps it for
// them. A partition whose transaction ended (here, aborted) is not in the
// producer's next one until added again: its batch is refused alike.
func TestVerificationAnswersTransactionAbortable(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "orders", 1)
	c := dialRaw(t, s)
	pid, epoch := initTxnProducer(t, c, "abortable")

	for v := int16(3); v <= 11; v++ {
		want := kerr.InvalidTxnState.Code
		if v >= 11 {
			want = kerr.TransactionAbortable.Code
		}
		assert.Equal(t, want, txnProduceCodeAt(c, v, "abortable", "orders", pid, epoch, 0), "Produce v%d", v)
	}
	for _, v := range []int16{4, 5} {
		check := kmsg.NewPtrAddPartitionsToTxnRequest()
		check.SetVersion(v)
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = "abortable", pid, epoch, true
		tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "orders", Partitions: []int32{0}}}
		check.Transactions = append(check.Transactions, tr)
		resp := c.RoundTrip(check).(*kmsg.AddPartitionsToTxnResponse)
		require.Len(t, resp.Transactions, 1)
		assert.Equal(t, kerr.TransactionAbortable.Code, resp.Transactions[0].Topics[0].Partitions[0].ErrorCode,
			"AddPartitionsToTxn v%d verify_only: a broker's check is answered as it is", v)
	}

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "abortable", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
	require.Equal(t, int16(0), c.RoundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int16(0), txnProduceCodeAt(c, 11, "abortable", "orders", pid, epoch, 0))
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "abortable", pid, epoch, false
	require.Equal(t, int16(0), c.RoundTrip(end).(*kmsg.EndTxnResponse).ErrorCode)
	p, err := s.data.store.Partition("orders", 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, _, open := p.OngoingTxn(pid)
		return !open
	}, 10*time.Second, 5*time.Millisecond, "the abort's marker ends it")
	assert.Equal(t, kerr.TransactionAbortable.Code, txnProduceCodeAt(c, 11, "abortable", "orders", pid, epoch, 1),
		"v11: the ended transaction's partition is not in the next one")
	assert.Equal(t, kerr.InvalidTxnState.Code, txnProduceCodeAt(c, 10, "abortable", "orders", pid, epoch, 1), "v10")
}
