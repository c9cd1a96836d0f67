package test

import (
	"context"
	"slices"
	"strings"
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

// setConfig is a kadm SET of name to value.
func setConfig(name, value string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
}

// requireAltered checks every resource of a kadm alter answer succeeded.
func requireAltered(t *testing.T, rs kadm.AlterConfigsResponses, err error) {
	t.Helper()
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.NoError(t, r.Err, "%s: %s", r.Name, r.ErrMessage)
	}
}

// topicConfig returns topic's config name, as kadm describes it.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	require.NoError(t, err)
	rc, err := rcs.On(topic, nil)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("%s has no config %s", topic, name)
	return kadm.Config{}
}

// produceSized writes one record of n bytes to topic's partition 0 with
// acks=all through a client of its own (a refused batch leaves no
// producer state behind), and returns the produce's error.
func produceSized(t *testing.T, seeds []string, topic string, n int) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer cl.Close()
	return cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: make([]byte, n)}).FirstErr()
}

// TestAlterConfigsOneBroker: a broker alone with log.dirs takes
// IncrementalAlterConfigs and AlterConfigs from kadm: a lowered
// max.message.bytes refuses the next larger batch, DescribeConfigs shows
// the topic's own values as DYNAMIC_TOPIC_CONFIG, errors are Kafka's, a
// restart keeps the change, and AlterConfigs' whole-set replacement
// gives the default back.
func TestAlterConfigsOneBroker(t *testing.T) {
	dir := t.TempDir()
	srv, stop := runBroker(t, durableConfig(dir))
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	seeds := []string{srv.Addr().String()}
	createTopic(t, cl, "cfg", 1)
	require.NoError(t, produceSized(t, seeds, "cfg", 2000))

	rs, err := adm.ValidateAlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("max.message.bytes", "1000")}, "cfg")
	requireAltered(t, rs, err)
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, topicConfig(t, adm, "cfg", "max.message.bytes").Source, "validate_only changes nothing")

	rs, err = adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("max.message.bytes", "1000"), setConfig("retention.ms", "3600000")}, "cfg")
	requireAltered(t, rs, err)
	assert.ErrorIs(t, produceSized(t, seeds, "cfg", 2000), kerr.MessageTooLarge, "the next larger batch is refused")
	require.NoError(t, produceSized(t, seeds, "cfg", 500))
	mmb := topicConfig(t, adm, "cfg", "max.message.bytes")
	assert.Equal(t, "1000", *mmb.Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, mmb.Source)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, topicConfig(t, adm, "cfg", "retention.ms").Source)
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, topicConfig(t, adm, "cfg", "min.insync.replicas").Source)

	rs, err = adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("max.message.bytes", "huge")}, "cfg", "nosuch")
	require.NoError(t, err)
	bad, _ := rs.On("cfg", nil)
	assert.ErrorIs(t, bad.Err, kerr.InvalidConfig)
	assert.Contains(t, bad.ErrMessage, "max.message.bytes")
	rs, err = adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("retention.ms", "1")}, "nosuch")
	require.NoError(t, err)
	missing, _ := rs.On("nosuch", nil)
	assert.ErrorIs(t, missing.Err, kerr.UnknownTopicOrPartition)
	rs, err = adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "cfg")
	require.NoError(t, err)
	appended, _ := rs.On("cfg", nil)
	assert.ErrorIs(t, appended.Err, kerr.InvalidConfig, "APPEND on a config that is not a list")
	cl.Close()
	stop()

	srv, _ = runBroker(t, durableConfig(dir))
	adm = kadm.NewClient(newClient(t, srv))
	seeds = []string{srv.Addr().String()}
	mmb = topicConfig(t, adm, "cfg", "max.message.bytes")
	assert.Equal(t, "1000", *mmb.Value, "the restart keeps the change")
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, mmb.Source)
	assert.ErrorIs(t, produceSized(t, seeds, "cfg", 2000), kerr.MessageTooLarge, "and enforces it")

	// AlterConfigs replaces the whole set: max.message.bytes, not named,
	// takes the default again.
	rs, err = adm.AlterTopicConfigsState(testCtx(t), []kadm.AlterConfig{setConfig("retention.ms", "7200000")}, "cfg")
	requireAltered(t, rs, err)
	require.NoError(t, produceSized(t, seeds, "cfg", 2000))
	mmb = topicConfig(t, adm, "cfg", "max.message.bytes")
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, mmb.Source)
	assert.Equal(t, "7200000", *topicConfig(t, adm, "cfg", "retention.ms").Value)
}

// describeAt returns topic's config name as broker id describes it (its
// own storage's value).
func describeAt(t *testing.T, cl *kgo.Client, id int32, topic, name string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	require.Zero(t, resp.Resources[0].ErrorCode)
	require.Len(t, resp.Resources[0].Configs, 1)
	return *resp.Resources[0].Configs[0].Value
}

// TestAlterConfigsCluster: on three brokers, max.message.bytes lowered
// with kadm refuses a larger batch at every partition's leader, each
// broker applying the record itself; raised again through a broker that
// is not the controller (which forwards it, after answering the resource
// it refuses itself: a static broker config), it accepts it everywhere.
func TestAlterConfigsCluster(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	adm := kadm.NewClient(cl)
	c.createTopic(cl, "cfg", 3, 3, nil) // partition p led by broker p+1
	big := strings.Repeat("x", 2000)
	everyBroker := func(value string) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			require.Eventually(t, func() bool { return describeAt(t, cl, id, "cfg", "max.message.bytes") == value },
				10*time.Second, 5*time.Millisecond, "broker %d applies max.message.bytes=%s", id, value)
		}
	}

	rs, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("max.message.bytes", "1000")}, "cfg")
	requireAltered(t, rs, err)
	everyBroker("1000")
	for p := int32(0); p < 3; p++ {
		leader := c.replica(1, "cfg", p).Leader
		assert.Equal(t, kerr.MessageTooLarge.Code, c.produceTo(cl, leader, "cfg", p, big), "partition %d at broker %d", p, leader)
	}

	other := c.activeController(cl)%3 + 1
	req := kmsg.NewPtrAlterConfigsRequest()
	for _, name := range []string{"cfg", "cfg"} {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		req.Resources = append(req.Resources, rr)
	}
	req.Resources[1].ResourceType = kmsg.ConfigResourceTypeBroker
	req.Resources[1].ResourceName = ""
	cfg := kmsg.NewAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "max.message.bytes", kmsg.StringPtr("1000000")
	static := kmsg.NewAlterConfigsRequestResourceConfig()
	static.Name, static.Value = "num.partitions", kmsg.StringPtr("3")
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{cfg}
	req.Resources[1].Configs = []kmsg.AlterConfigsRequestResourceConfig{static}
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(other)))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 2)
	assert.Equal(t, "cfg", resp.Resources[0].ResourceName)
	assert.Zero(t, resp.Resources[0].ErrorCode, "the topic, decided by the controller")
	assert.Equal(t, kmsg.ConfigResourceTypeBroker, resp.Resources[1].ResourceType)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[1].ErrorCode, "a static broker config: refused by the broker asked")

	everyBroker("1000000")
	for p := int32(0); p < 3; p++ {
		leader := c.replica(1, "cfg", p).Leader
		assert.Zero(t, c.produceTo(cl, leader, "cfg", p, big), "partition %d at broker %d", p, leader)
	}
}

// partitionAt returns topic's partition 0 as broker id's Metadata gives
// it; a failed request (the first on a connection to a restarted broker
// fails) is a partition of no leader, no replicas and no ISR.
func partitionAt(t *testing.T, cl *kgo.Client, id int32, topic string) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.MetadataResponseTopicPartition{Leader: -2}
	}
	return resp.Topics[0].Partitions[0]
}

// TestAlterConfigsUncleanElection: partition 0 of a topic on brokers 1
// and 2 shrinks to ISR [1] while broker 2 is away; broker 2 comes back
// but stays out of the ISR (its fetches wait at the leader for more bytes
// than there are), then broker 1 stops: the partition is offline, and
// stays so, its only in-sync replica gone. unclean.leader.election.enable
// set with kadm elects broker 2 in the same record, alone in the ISR: the
// partition takes acks=all produces again, without the record only
// broker 1 had. (A broker here keeps its logs in memory: broker 2
// restarts empty.)
func TestAlterConfigsUncleanElection(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.AutoLeaderRebalance = false })
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(20*time.Second))
	adm := kadm.NewClient(cl)
	c.createTopic(cl, "unclean", 1, 2, map[string]string{"min.insync.replicas": "1"})
	require.Equal(t, []int32{1, 2}, c.replica(1, "unclean", 0).Replicas)
	produce := func(v string) {
		t.Helper()
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "unclean", Value: []byte(v)}).FirstErr())
	}
	produce("both")

	c.stop(2)
	require.Eventually(t, func() bool { return slices.Equal(partitionAt(t, cl, 3, "unclean").ISR, []int32{1}) },
		10*time.Second, 10*time.Millisecond, "broker 2 leaves the ISR")
	produce("only-1")
	c.cfgs[1].ReplicaFetchMinBytes, c.cfgs[1].ReplicaFetchWaitMax = 64<<20, time.Minute
	c.start(2)
	require.Eventually(t, func() bool { return len(partitionAt(t, cl, 3, "unclean").OfflineReplicas) == 0 },
		10*time.Second, 10*time.Millisecond, "broker 2 registers again")
	require.Equal(t, []int32{1}, partitionAt(t, cl, 3, "unclean").ISR, "out of the ISR: it lacks a record")

	c.stop(1)
	require.Eventually(t, func() bool { return partitionAt(t, cl, 3, "unclean").Leader == -1 },
		10*time.Second, 10*time.Millisecond, "the partition goes offline")
	p := partitionAt(t, cl, 3, "unclean")
	assert.Equal(t, int32(-1), p.Leader, "no clean election can bring it back")
	assert.Equal(t, []int32{1}, p.ISR)

	rs, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{setConfig("unclean.leader.election.enable", "true")}, "unclean")
	requireAltered(t, rs, err)
	for _, id := range []int32{2, 3} {
		require.Eventually(t, func() bool { return partitionAt(t, cl, id, "unclean").Leader == 2 },
			10*time.Second, 10*time.Millisecond, "broker %d sees broker 2 elected", id)
	}
	p = partitionAt(t, cl, 3, "unclean")
	assert.Equal(t, []int32{2}, p.ISR, "alone in the ISR")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "unclean", Value: []byte("after")}).FirstErr())
	// Broker 2 restarted empty (in memory) and fetched nothing since: its
	// log is what it took as leader.
	n := int(c.replica(2, "unclean", 0).LogEnd)
	got := consumePartition(t, c.seeds()[1:], "unclean", 0, n)
	assert.Equal(t, "after", got[len(got)-1])
	assert.NotContains(t, got, "only-1", "the record only broker 1 had is lost, as an unclean election loses it")
}
