package test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// durableConfig is a broker keeping its data in dir, with small segments
// so that the tests roll some.
func durableConfig(dir string) server.Config {
	cfg := server.Default()
	cfg.Listener = "127.0.0.1:0"
	cfg.LogDirs = dir
	cfg.LogSegmentBytes = 16 << 10
	cfg.LogIndexIntervalBytes = 1024
	cfg.GroupInitialRebalance = 50 * time.Millisecond
	return cfg
}

// commitSimple commits offsets to group as a simple consumer does
// (generation -1, no member), with a raw OffsetCommit.
func commitSimple(t *testing.T, cl *kgo.Client, group, topic string, offsets map[int32]int64) {
	t.Helper()
	require.NoError(t, commitOffsets(cl, group, topic, offsets, 5*time.Second))
}

// commitOffsets is a simple consumer's OffsetCommit of offsets to group
// through cl, which finds the coordinator; it returns the request's error,
// or the first partition's error, or nil once every commit is acknowledged.
func commitOffsets(cl *kgo.Client, group, topic string, offsets map[int32]int64, timeout time.Duration) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, err)
			}
		}
	}
	return nil
}

// sameOffset is offset for each of partitions partitions.
func sameOffset(partitions int32, offset int64) map[int32]int64 {
	m := make(map[int32]int64, partitions)
	for p := range partitions {
		m[p] = offset
	}
	return m
}

// endOffsets returns each partition's log end offset (ListOffsets,
// latest), asking again while a partition answers with a retriable error:
// its leadership is moving (NOT_LEADER_OR_FOLLOWER, or
// LEADER_NOT_AVAILABLE from a broker still catching up on the metadata
// log), or cannot be dialled: a killed leader the controller has not yet
// fenced (it is fenced a session timeout after its last heartbeat, as in
// Kafka) is still named in Metadata.
func endOffsets(t *testing.T, cl *kgo.Client, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	var (
		out map[int32]int64
		err error
	)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if out, err = tryEndOffsets(cl, topic, partitions); err == nil {
			return out
		}
		var netErr *net.OpError
		retriable := kerr.IsRetriable(err) || errors.As(err, &netErr)
		require.True(t, retriable && time.Now().Before(deadline), "list offsets: %v", err)
		time.Sleep(50 * time.Millisecond) // a retry's pace, not a verdict
	}
}

// tryEndOffsets asks once for each partition's log end offset.
func tryEndOffsets(cl *kgo.Client, topic string, partitions int32) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, err
		}
		out[p.Partition] = p.Offset
	}
	return out, nil
}

// consumeTo reads topic from its start until every partition reaches its
// offset in ends, and returns the records by partition, in order. It
// allows 20s, and a second more for every 200,000 records: a 5-minute
// chaos run (make chaos) acknowledges some 40 million.
func consumeTo(t *testing.T, cl *kgo.Client, ends map[int32]int64) map[int32][]*kgo.Record {
	t.Helper()
	var total int64
	for _, end := range ends {
		total += end
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second+time.Duration(total/200_000)*time.Second)
	defer cancel()
	got := make(map[int32][]*kgo.Record)
	done := func() bool {
		for p, end := range ends {
			if n := len(got[p]); end > 0 && (n == 0 || got[p][n-1].Offset < end-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %v of %v", len(got), ends)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetching %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	return got
}

// produceRaw sends one v2 batch of values from an idempotent producer
// (id, epoch 0, first sequence seq) to topic-partition with acks=all, as a
// retrying producer sends it, and returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, id int64, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceBatch(t, cl, topicID(t, cl, topic), topic, partition, idempotentBatch(id, seq, values...))
}

// produceBatch sends batch to topic's partition with acks=all through to
// (a client, or one broker of it) and returns the partition's answer.
func produceBatch(t testing.TB, to kmsg.Requestor, id [16]byte, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, to)
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

// idempotentBatch encodes a v2 record batch with kmsg, as a producer
// does: the records with their lengths, the batch length and CRC-32C.
func idempotentBatch(id int64, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: id, ProducerEpoch: 0, FirstSequence: seq, NumRecords: int32(len(values)), Records: recs}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(raw[:0])
}

// topicID returns topic's id, from Metadata.
func topicID(t testing.TB, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	return topicMetadata(t, cl, topic).TopicID
}

// topicMetadata returns topic as Metadata describes it, asked through from
// (a client, or one broker of it).
func topicMetadata(t testing.TB, from kmsg.Requestor, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, from)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	return resp.Topics[0]
}
