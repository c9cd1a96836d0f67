package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// produceRequest asks to append records to topic's partition.
func produceRequest(v int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: records}}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// byID addresses req's topics by id, as v13 does.
func byID(req *kmsg.ProduceRequest, id storage.TopicID) *kmsg.ProduceRequest {
	req.Topics[0].TopicID = id
	return req
}

// produced returns the only partition result of a produce response.
func produced(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	require.Len(t, pr.Topics, 1)
	require.Len(t, pr.Topics[0].Partitions, 1)
	return pr.Topics[0].Partitions[0]
}

func TestProduceEveryVersion(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "p", 2)
	c := dialRaw(t, s)
	next := int64(0)
	for _, v := range versions(3, 13) {
		for _, acks := range []int16{1, -1} {
			t.Run(fmt.Sprintf("v%d acks %d", v, acks), func(t *testing.T) {
				req := byID(produceRequest(v, acks, "p", 1, batchtest.Values(time.Now().UnixMilli(), "a", "b")), topic.ID)
				sp := produced(t, c.RoundTrip(req))
				assert.Equal(t, int16(0), sp.ErrorCode, "%v", kerr.ErrorForCode(sp.ErrorCode))
				assert.Equal(t, next, sp.BaseOffset)
				if v >= 5 {
					assert.Equal(t, int64(0), sp.LogStartOffset)
				}
				assert.Equal(t, int64(-1), sp.LogAppendTime, "CreateTime")
				next += 2
			})
		}
	}
	o, err := topic.Partitions[1].Offsets()
	require.NoError(t, err)
	assert.Equal(t, next, o.HighWatermark)
	assert.Zero(t, s.replicas.Produces().Delayed(), "acks=all on one broker completes at once")
}

func TestProduceErrors(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MessageMaxBytes = 200 })
	topic := createTopic(t, s, "p", 1)
	good := batchtest.Values(1, "x")
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	tests := []struct {
		name string
		req  *kmsg.ProduceRequest
		want *kerr.Error
	}{
		{"corrupt batch", produceRequest(9, 1, "p", 0, corrupt), kerr.CorruptMessage},
		{"truncated batch", produceRequest(9, 1, "p", 0, good[:len(good)-3]), kerr.CorruptMessage},
		{"two batches", produceRequest(9, 1, "p", 0, append(append([]byte(nil), good...), good...)), kerr.InvalidRecord},
		{"no batch", produceRequest(9, 1, "p", 0, nil), kerr.InvalidRecord},
		{"too large", produceRequest(9, 1, "p", 0, batchtest.Values(1, string(make([]byte, 200)))), kerr.MessageTooLarge},
		{"unknown topic", produceRequest(9, 1, "nope", 0, good), kerr.UnknownTopicOrPartition},
		{"unknown partition", produceRequest(9, 1, "p", 1, good), kerr.UnknownTopicOrPartition},
		{"unknown topic id", byID(produceRequest(13, 1, "", 0, good), storage.TopicID{7}), kerr.UnknownTopicID},
		{"acks 2", produceRequest(9, 2, "p", 0, good), kerr.InvalidRequiredAcks},
		{"acks all, corrupt", produceRequest(9, -1, "p", 0, corrupt), kerr.CorruptMessage},
	}
	c := dialRaw(t, s)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := produced(t, c.RoundTrip(tt.req))
			assert.Equal(t, tt.want.Code, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
			assert.Equal(t, int64(-1), sp.BaseOffset)
			if tt.want != kerr.InvalidRequiredAcks {
				assert.NotNil(t, sp.ErrorMessage, "v8+ says why")
			}
		})
	}
	o, err := topic.Partitions[0].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.LogEnd, "nothing was appended")
}

func TestProduceAcksZero(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "p", 1)
	c := dialRaw(t, s)
	c.Send(produceRequest(9, 0, "p", 0, batchtest.Values(1, "a")))
	c.Send(produceRequest(9, 0, "p", 0, batchtest.Values(1, "b")))
	// The next request's answer is the next thing read: no answer to the
	// acks=0 produces, and they were appended before it was served.
	c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	o, _ := topic.Partitions[0].Offsets()
	assert.Equal(t, int64(2), o.LogEnd)
}

func TestProduceAcksZeroFailureClosesTheConnection(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	before := kmsg.NewPtrApiVersionsRequest()
	first := c.Send(before)
	c.Send(produceRequest(9, 0, "missing", 0, batchtest.Values(1, "a")))
	c.Send(kmsg.NewPtrApiVersionsRequest())
	resp := kmsg.NewPtrApiVersionsResponse()
	assert.Equal(t, first, c.Recv(resp), "the answer owed before the failed produce is written")
	assert.True(t, c.ClosedByPeer(), "then the broker hangs up, as Kafka does, so the client notices")
	// The broker goes on serving others.
	dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest())
}

func TestProduceIdempotence(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "p", 1)
	c := dialRaw(t, s)
	send := func(epoch int16, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
		return produced(t, c.RoundTrip(produceRequest(9, -1, "p", 0, batchtest.Idempotent(11, epoch, seq, 1, values...))))
	}
	sp := send(0, 0, "a", "b")
	require.Equal(t, int16(0), sp.ErrorCode)
	assert.Equal(t, int64(0), sp.BaseOffset)
	sp = send(0, 2, "c")
	require.Equal(t, int16(0), sp.ErrorCode)
	assert.Equal(t, int64(2), sp.BaseOffset)

	sp = send(0, 0, "a", "b")
	assert.Equal(t, int16(0), sp.ErrorCode, "a retry is answered NONE")
	assert.Equal(t, int64(0), sp.BaseOffset, "with its original offset")
	sp = send(0, 5, "d")
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, sp.ErrorCode)
	sp = send(1, 0, "e")
	assert.Equal(t, int16(0), sp.ErrorCode, "a bumped epoch starts at 0")
	assert.Equal(t, int64(3), sp.BaseOffset)
	sp = send(0, 3, "f")
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, sp.ErrorCode)
}

// TestProduceAppendsTransactionalBatches: a transactional batch is
// appended, and opens its producer's transaction in the partition, where
// a batch of it that is not transactional is INVALID_TXN_STATE.
func TestProduceAppendsTransactionalBatches(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "p", 1)
	conn := dialRaw(t, s)
	sp := produced(t, conn.RoundTrip(produceRequest(9, -1, "p", 0, batchtest.Transactional(1, 0, 0, 1, "x"))))
	assert.Equal(t, int16(0), sp.ErrorCode)
	assert.Equal(t, int64(0), sp.BaseOffset)
	sp = produced(t, conn.RoundTrip(produceRequest(10, -1, "p", 0, batchtest.Idempotent(1, 0, 1, 1, "y"))))
	assert.Equal(t, kerr.InvalidTxnState.Code, sp.ErrorCode)
}

// laggingWait is a wait on p for one offset beyond its log end: a
// follower that has not caught up, which one broker never has, so the
// delayed produce's real wait can be tested.
func laggingWait(t *testing.T, p *storage.Partition) []replica.ProduceWait {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	return []replica.ProduceWait{{Partition: p, Required: o.LogEnd + 1}}
}

func produceResponseFor(topic string) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	st := kmsg.NewProduceResponseTopic()
	st.Topic = topic
	st.Partitions = []kmsg.ProduceResponseTopicPartition{kmsg.NewProduceResponseTopicPartition()}
	resp.Topics = []kmsg.ProduceResponseTopic{st}
	return resp
}

func TestDelayedProduceTimesOut(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "p", 1)
	tc := newTestConn(t, s)
	r := tc.request(produceRequest(9, -1, "p", 0, nil))
	s.replicas.AwaitReplication(r, produceResponseFor("p"), laggingWait(t, topic.Partitions[0]), 50*time.Millisecond)
	_, answered := tc.answer(r)
	require.False(t, answered, "waits for the high watermark")
	assert.Equal(t, 1, s.replicas.Produces().Delayed())
	sp := produced(t, tc.await(r))
	assert.Equal(t, kerr.RequestTimedOut.Code, sp.ErrorCode)
	assert.Equal(t, int64(-1), sp.BaseOffset)
	assert.Zero(t, s.replicas.Produces().Delayed())
}

func TestDelayedProduceAnsweredWhenItsTopicIsDeleted(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "doomed", 1)
	tc := newTestConn(t, s)
	r := tc.request(produceRequest(9, -1, "doomed", 0, nil))
	s.replicas.AwaitReplication(r, produceResponseFor("doomed"), laggingWait(t, topic.Partitions[0]), time.Minute)
	require.Equal(t, 1, s.replicas.Produces().Delayed())

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("doomed")}}
	require.Equal(t, int16(0), dialRaw(t, s).RoundTrip(del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode)
	resp, answered := tc.answer(r)
	require.True(t, answered, "answered by the deletion, before DeleteTopics returned")
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, produced(t, resp).ErrorCode)
	assert.Zero(t, s.replicas.Produces().Delayed())
}

func TestDelayedProduceAnsweredWhenTheClientGoes(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "p", 1)
	tc := newTestConn(t, s)
	r := tc.request(produceRequest(9, -1, "p", 0, nil))
	s.replicas.AwaitReplication(r, produceResponseFor("p"), laggingWait(t, topic.Partitions[0]), time.Minute)
	require.Equal(t, 1, s.replicas.Produces().Delayed())
	tc.rec.Close() // cancels the connection's context: the produce completes on its own goroutine
	resp := tc.await(r)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, produced(t, resp).ErrorCode)
	assert.Zero(t, s.replicas.Produces().Delayed())
}
