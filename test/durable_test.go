package test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDurableRestart stops a broker with log.dirs and starts another on
// the same directory: every record acknowledged (acks=all, idempotent) is
// there, in order, once; the groups' committed offsets are back; a
// producer's retry of a batch acknowledged before the restart is answered
// with its first offset, not written again; a new producer gets an id no
// producer had before.
func TestDurableRestart(t *testing.T) {
	const topic, partitions, perPartition = "durable", 3, 300
	dir := t.TempDir()
	srv, stop := runBroker(t, durableConfig(dir))
	admin := newClient(t, srv)
	createTopic(t, admin, topic, partitions)
	clusterID := metadataClusterID(t, admin)

	// Produce, acks=all and idempotent (kgo's defaults), to each
	// partition in turn: 16 KiB segments roll several times.
	prod := newClient(t, srv, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(4<<10))
	acked := make(map[int32][]string) // by partition, in offset order
	var recs []*kgo.Record
	for i := range partitions * perPartition {
		p := int32(i % partitions)
		recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%04d-%0200d", p, i, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, r := range prod.ProduceSync(ctx, recs...) {
		require.NoError(t, r.Err)
		require.Equal(t, int64(len(acked[r.Record.Partition])), r.Record.Offset, "offsets follow each other")
		acked[r.Record.Partition] = append(acked[r.Record.Partition], string(r.Record.Value))
	}
	retried := produceRaw(t, admin, topic, 1, 4242, 0, "raw-a", "raw-b")
	require.Zero(t, retried.ErrorCode)
	acked[1] = append(acked[1], "raw-a", "raw-b")

	// Offsets: a consumer group reads everything and commits, a simple
	// consumer commits its own.
	readers := newClient(t, srv, kgo.ConsumerGroup("readers"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	read := 0
	for read < partitions*perPartition+2 {
		fs := readers.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		read += fs.NumRecords()
	}
	require.NoError(t, readers.CommitUncommittedOffsets(ctx))
	readers.Close()
	commitSimple(t, admin, "simple", topic, map[int32]int64{0: 5, 1: 17, 2: 299})
	readersBefore := committedOffsets(t, admin, "readers", topic, partitions)
	assert.Equal(t, map[int32]int64{0: perPartition, 1: perPartition + 2, 2: perPartition}, readersBefore)
	stop()
	segments, err := filepath.Glob(filepath.Join(dir, topic+"-1", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segments), 2, "the partitions rolled segments")

	srv, _ = runBroker(t, durableConfig(dir))
	admin = newClient(t, srv)
	assert.Equal(t, clusterID, metadataClusterID(t, admin), "the cluster id is the log dir's")
	ends := endOffsets(t, admin, topic, partitions)
	assert.Equal(t, map[int32]int64{0: perPartition, 1: perPartition + 2, 2: perPartition}, ends, "the log ends where it did")
	cons := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeTo(t, cons, ends)
	for p := range int32(partitions) {
		var values []string
		for i, r := range got[p] {
			require.Equal(t, int64(i), r.Offset)
			values = append(values, string(r.Value))
		}
		require.Equal(t, acked[p], values, "partition %d: every acknowledged record, in order, once", p)
	}
	assert.Equal(t, readersBefore, committedOffsets(t, admin, "readers", topic, partitions), "the group's offsets are back")
	assert.Equal(t, map[int32]int64{0: 5, 1: 17, 2: 299}, committedOffsets(t, admin, "simple", topic, partitions))

	again := produceRaw(t, admin, topic, 1, 4242, 0, "raw-a", "raw-b")
	assert.Zero(t, again.ErrorCode)
	assert.Equal(t, retried.BaseOffset, again.BaseOffset, "the retry is recognised after the restart")
	assert.Equal(t, ends, endOffsets(t, admin, topic, partitions), "and not written again")

	id := initProducerID(t, admin)
	assert.GreaterOrEqual(t, id, int64(1000), "a new block of producer ids: none handed out before the restart")
	newProd := newClient(t, srv, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	r, err := newProd.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after")}).First()
	require.NoError(t, err, "a new producer writes after the restart")
	assert.Equal(t, int64(perPartition), r.Offset)
}

func metadataClusterID(t *testing.T, cl *kgo.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NotNil(t, resp.ClusterID)
	return *resp.ClusterID
}

func initProducerID(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode)
	return resp.ProducerID
}
