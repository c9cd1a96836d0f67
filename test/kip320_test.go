package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP320UncleanElectionTruncation: a consumer sees, through franz-go's
// KIP-320 path, the truncation an unclean election causes, and goes on.
//
// Three broker binaries; partition 0 of a topic with
// unclean.leader.election.enable=true and min.insync.replicas=1 is on
// brokers 1 (its leader) and 2; broker 3 only votes in the quorum. Ten
// records are written to both. Broker 2 is killed -9 and fenced, so the
// ISR shrinks to [1], and ten more records are written to broker 1 alone;
// a consumer reads all twenty from it, at leader epoch 0. Broker 2
// restarts on its log dir, registers, but stays out of the ISR: its
// fetches wait at the leader for more bytes than a fetch can hold
// (replica.fetch.min.bytes) for a minute, so it holds ten records. Broker
// 1 is killed -9: when it is fenced, no ISR member is alive, and the
// controller elects broker 2 uncleanly, alone in the ISR, at epoch 1; it
// takes five new records, at offsets 10 to 14.
//
// The consumer, positioned at offset 20 after epoch 0, sees the new leader
// epoch in Metadata, asks broker 2 with OffsetForLeaderEpoch where epoch
// 0 ends (offset 10, where broker 2's epoch 1 starts), reports
// kgo.ErrDataLoss (consumed to 20, reset to 10) in its fetch errors, and
// reads the five new records from offset 10 on.
func TestKIP320UncleanElectionTruncation(t *testing.T) {
	const (
		topic   = "kip320"
		session = 1500 * time.Millisecond
	)
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250",
		"--broker.session.timeout.ms", strconv.Itoa(int(session.Milliseconds())),
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50")
	admin := c.client()
	c.createTopicRF(admin, topic, 1, 2, map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
	p0 := c.awaitPartition0(admin, 3, topic, 10*time.Second, "partition 0 on brokers 1 and 2, led by 1",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader == 1 && len(p.ISR) == 2 })
	require.Equal(t, []int32{1, 2}, p0.Replicas)

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	produce := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "%s%d", prefix, i)}).FirstErr())
			cancel()
		}
	}
	produce("old", 10) // acks=all with ISR [1 2]: both have them

	require.NoError(t, c.procs[2].cmd.Process.Signal(syscall.SIGKILL))
	c.awaitPartition0(admin, 1, topic, 30*time.Second, "broker 2 is fenced and leaves the ISR",
		func(p kmsg.MetadataResponseTopicPartition) bool { return slices.Equal(p.ISR, []int32{1}) })
	produce("lost", 10) // acks=all with ISR [1]: only broker 1 has them

	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var read []*kgo.Record
	for len(read) < 20 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of 20", len(read))
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("before the election: %v", err) })
		read = append(read, fs.Records()...)
	}
	require.Len(t, read, 20)
	assert.Equal(t, int64(19), read[19].Offset)
	assert.Equal(t, int32(0), read[19].LeaderEpoch, "read at leader epoch 0")

	// Broker 2 comes back out of sync, and stays so.
	c.argv[2] = append(c.argv[2], "--replica.fetch.min.bytes", strconv.Itoa(64<<20), "--replica.fetch.wait.max.ms", "60000")
	c.restart(2)
	c.awaitPartition0(admin, 3, topic, 30*time.Second, "broker 2 registers again, outside the ISR",
		func(p kmsg.MetadataResponseTopicPartition) bool {
			return p.Leader == 1 && slices.Equal(p.ISR, []int32{1}) && len(p.OfflineReplicas) == 0
		})

	require.NoError(t, c.procs[1].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	p0 = c.awaitPartition0(admin, 3, topic, 30*time.Second, "broker 2 is elected uncleanly",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader == 2 })
	t.Logf("broker 2 elected %v after broker 1's kill, at leader epoch %d", time.Since(killed), p0.LeaderEpoch)
	assert.Equal(t, int32(1), p0.LeaderEpoch, "one election past epoch 0")
	assert.Equal(t, []int32{2}, p0.ISR, "alone in the ISR")
	produce("new", 5)

	// The consumer's next fetches: the truncation, reported once, then
	// the new records from where epoch 0 ends at the new leader.
	var (
		lost  []*kgo.ErrDataLoss
		fresh []*kgo.Record
	)
	for len(fresh) < 5 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "after the election: %d data losses, %d records", len(lost), len(fresh))
		fs.EachError(func(_ string, _ int32, err error) {
			if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
				lost = append(lost, dl)
				return
			}
			t.Logf("a fetch error on the way (retried): %v", err)
		})
		fresh = append(fresh, fs.Records()...)
	}
	require.Len(t, lost, 1, "the truncation is reported once")
	assert.Equal(t, int64(20), lost[0].ConsumedTo, "the consumer had read to offset 20")
	assert.Equal(t, int32(0), lost[0].ConsumedToEpoch)
	assert.Equal(t, int64(10), lost[0].ResetTo, "epoch 0 ends at offset 10 at the new leader")
	var got []string
	for i, r := range fresh {
		got = append(got, string(r.Value))
		assert.Equal(t, int64(10+i), r.Offset)
		assert.Equal(t, int32(1), r.LeaderEpoch, "written at the new leader epoch")
	}
	assert.Equal(t, []string{"new0", "new1", "new2", "new3", "new4"}, got, "the new records, and none of the lost")
}
