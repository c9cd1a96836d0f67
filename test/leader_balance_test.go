package test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// leaderAt returns topic's partition's leader as broker id's Metadata
// gives it, or -1 when the broker does not answer (a connection to a
// restarted broker fails once).
func leaderAt(t *testing.T, cl *kgo.Client, id int32, topic string, partition int32) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Topics) != 1 {
		return -1
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == partition {
			return p.Leader
		}
	}
	return -1
}

// restartPreferred restarts broker 1, the preferred replica of topic's
// partition 0, and waits until it is back in that partition's ISR, led
// by another broker meanwhile.
func restartPreferred(t *testing.T, c *testCluster, cl *kgo.Client, topic string) {
	t.Helper()
	require.Equal(t, int32(1), leaderAt(t, cl, 2, topic, 0), "broker 1 is partition 0's first replica")
	c.stop(1)
	require.Eventually(t, func() bool { l := leaderAt(t, cl, 2, topic, 0); return l != 1 && l != -1 }, 10*time.Second, 20*time.Millisecond,
		"the leadership moves away from the stopped broker")
	c.start(1)
	require.Eventually(t, func() bool {
		isr := c.metadataISR(cl, 2, topic, 0)
		return len(isr) == 3
	}, 20*time.Second, 20*time.Millisecond, "the restarted broker catches up and rejoins the ISR")
}

// TestElectLeadersPreferred: after a restart, broker 1 leads none of the
// partitions it prefers until kadm's ElectLeaders gives partition 0 back
// to it; the leadership serves acks=all produces and keeps what was
// acknowledged; a second election is not needed, and an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestElectLeadersPreferred(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.AutoLeaderRebalance = false })
	cl := c.client(kgo.DefaultProduceTopic("pref"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	c.createTopic(cl, "pref", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())

	restartPreferred(t, c, cl, "pref")
	assert.NotEqual(t, int32(1), leaderAt(t, cl, 2, "pref", 0), "nothing gives it back by itself")

	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}, "nosuch": {0: {}}})
	require.NoError(t, err)
	require.NoError(t, res["pref"][0].Err)
	assert.ErrorIs(t, res["nosuch"][0].Err, kerr.UnknownTopicOrPartition)
	for id := int32(1); id <= 3; id++ {
		require.Eventually(t, func() bool { return leaderAt(t, cl, id, "pref", 0) == 1 }, 10*time.Second, 10*time.Millisecond,
			"broker %d sees broker 1 lead again", id)
	}
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr())

	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}})
	require.NoError(t, err)
	assert.ErrorIs(t, res["pref"][0].Err, kerr.ElectionNotNeeded)
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	require.NoError(t, err)
	assert.Empty(t, res, "every partition: those needing no election are left out")

	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"pref": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, []string{"before", "after"}, got, "every acknowledged record, once, in order")
}

// TestAutoLeaderRebalance: with auto.leader.rebalance.enable (the
// default), the active controller gives broker 1 back the leadership of
// the partition it prefers within a check interval of its rejoining the
// ISR, with no client asking.
func TestAutoLeaderRebalance(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.LeaderImbalanceCheck = 200 * time.Millisecond })
	cl := c.client()
	c.createTopic(cl, "auto", 3, 3, nil)
	restartPreferred(t, c, cl, "auto")
	require.Eventually(t, func() bool { return leaderAt(t, cl, 2, "auto", 0) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the controller's imbalance check gives it back")
}
