package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestEpochTruncationOfDivergentFollower is KIP-101's case: broker 1
// leads partition 0 (replicas 1 and 2, min.insync.replicas 1) at epoch 0
// and takes five records with acks=1 that broker 2 never gets: broker 2's
// fetches wait at the leader for a megabyte (replica.fetch.min.bytes) for
// up to a minute, so none of them comes back before broker 1 stops. Broker
// 2 leads at epoch 1 and takes eight records, more than broker 1 had.
// Broker 1 restarts on its log dir and follows: asked where epoch 0 ends,
// broker 2 answers offset 0 (it holds nothing of it), so broker 1 cuts its
// five divergent records and fetches broker 2's. Truncating by log end
// would keep them (five is below broker 2's eight) and fetch from offset
// 5: the two logs would then differ below the same log end. Once broker 1
// is back in the ISR, broker 2 stops and broker 1 leads: a consumer reads
// broker 2's eight records from it, none of the five.
func TestEpochTruncationOfDivergentFollower(t *testing.T) {
	const topic = "diverged"
	c := newTestCluster(t, 3, func(cfg *server.Config) {
		cfg.LogDirs = t.TempDir()
		cfg.ReplicaFetchMinBytes = 1 << 20
		cfg.ReplicaFetchWaitMax = time.Minute
	})
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	admin := c.client(kgo.MetadataMinAge(50 * time.Millisecond))
	c.createTopic(admin, topic, 1, 2, map[string]string{"min.insync.replicas": "1"})
	require.Equal(t, int32(1), c.replica(1, topic, 0).Leader, "placement: partition 0 on brokers 1 and 2, led by 1")

	produce := func(prefix string, n int) {
		t.Helper()
		cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.MetadataMinAge(50*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "%s%d", prefix, i)}).FirstErr())
			cancel()
		}
	}
	produce("a", 5)
	assert.Equal(t, int64(5), c.replica(1, topic, 0).LogEnd)
	assert.Zero(t, c.replica(2, topic, 0).LogEnd, "broker 2's fetch still waits for its megabyte")

	// Only the leader answers OffsetForLeaderEpoch.
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	for id, want := range map[int32]int16{1: 0, 2: kerr.NotLeaderForPartition.Code} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, admin.Broker(int(id)))
		cancel()
		require.NoError(t, err)
		assert.Equal(t, want, resp.Topics[0].Partitions[0].ErrorCode, "OffsetForLeaderEpoch at broker %d", id)
	}

	c.stop(1) // a controlled shutdown: broker 2, in the ISR, leads at epoch 1
	require.Eventually(t, func() bool {
		ri := c.replica(2, topic, 0)
		return ri.Leader == 2 && ri.LeaderEpoch == 1
	}, 10*time.Second, 5*time.Millisecond, "broker 2 leads")
	require.Zero(t, c.replica(2, topic, 0).LogEnd, "broker 2 never got broker 1's records")
	produce("b", 8)
	leaderLog := c.replica(2, topic, 0)

	// Broker 1 comes back, fetching as followers usually do.
	c.cfgs[0].ReplicaFetchMinBytes, c.cfgs[0].ReplicaFetchWaitMax = 1, 500*time.Millisecond
	c.start(1)
	require.Eventually(t, func() bool {
		ri := c.replica(1, topic, 0)
		return ri.LogEnd == leaderLog.LogEnd && len(c.metadataISR(admin, 2, topic, 0)) == 2
	}, 20*time.Second, 5*time.Millisecond, "broker 1 catches up and rejoins the ISR")
	assert.Equal(t, leaderLog.LeaderEpochs, c.replica(1, topic, 0).LeaderEpochs,
		"the follower's epochs are the leader's: its epoch-0 records are gone")

	c.stop(2) // broker 1 leads again: read its log
	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(50*time.Millisecond))
	var got []string
	for _, r := range consumeTo(t, consumer, map[int32]int64{0: leaderLog.LogEnd})[0] {
		got = append(got, string(r.Value))
	}
	assert.Equal(t, []string{"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}, got, "broker 1's log is broker 2's")
}
