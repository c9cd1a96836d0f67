package test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// TestProxyIsTheOnlyBrokerClientsSee checks the proxy's view of the
// cluster on the raw wire, in front of a three-broker cluster: Metadata
// names the proxy as the one broker, controller, leader and replica of
// everything, with upstream's topics, ids and leader epochs;
// FindCoordinator names the proxy; ApiVersions lists what both the proxy
// and upstream serve, at the versions both serve.
func TestProxyIsTheOnlyBrokerClientsSee(t *testing.T) {
	c := startCluster(t, 3)
	p := startProxy(t, strings.Join(c.seeds(), ","), func(cfg *proxy.Config) { cfg.NodeID = 7 })
	admin := proxyClient(t, p)
	createTopic(t, admin, "viewed", 3)
	host, portText, err := net.SplitHostPort(p.Addr().String())
	require.NoError(t, err)
	port, _ := strconv.Atoi(portText)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Broker 1, once it has applied the topic from the metadata log.
	require.Eventually(t, func() bool { return c.broker(1).IsController() || c.hasTopic(newClient(t, c.broker(1)), 1, "viewed") },
		5*time.Second, 10*time.Millisecond)
	upstream := topicMetadata(t, newClient(t, c.broker(1)), "viewed")
	meta := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	topic := "viewed"
	rt.Topic = &topic
	meta.Topics = []kmsg.MetadataRequestTopic{rt}
	var m *kmsg.MetadataResponse
	// Every broker applies the topic from the metadata log: the one the
	// proxy asks may not have it yet.
	require.Eventually(t, func() bool {
		m, err = meta.RequestWith(ctx, admin)
		require.NoError(t, err)
		return len(m.Topics) == 1 && m.Topics[0].ErrorCode == 0
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 7, Host: host, Port: int32(port)}}, m.Brokers, "the proxy alone")
	assert.Equal(t, int32(7), m.ControllerID)
	require.Len(t, m.Topics, 1)
	assert.Equal(t, upstream.TopicID, m.Topics[0].TopicID, "upstream's topic id")
	require.Len(t, m.Topics[0].Partitions, 3)
	for i, part := range m.Topics[0].Partitions {
		assert.Equal(t, int32(7), part.Leader, "partition %d: led by the proxy", i)
		assert.Equal(t, []int32{7}, part.Replicas)
		assert.Equal(t, []int32{7}, part.ISR)
		assert.Equal(t, upstream.Partitions[i].LeaderEpoch, part.LeaderEpoch, "upstream's leader epoch")
	}

	for _, version := range []int16{3, 4} {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(version)
		fc.CoordinatorKey, fc.CoordinatorKeys = "viewers", []string{"viewers"}
		var coord kmsg.FindCoordinatorResponse
		require.Eventually(t, func() bool {
			resp, err := fc.RequestWith(ctx, admin)
			require.NoError(t, err)
			coord = *resp
			return coordinatorsOf(resp)[0].ErrorCode == 0 // the offsets topic may be on its way
		}, 10*time.Second, 10*time.Millisecond)
		got := coordinatorsOf(&coord)[0]
		assert.Equal(t, int32(7), got.NodeID, "v%d: the proxy coordinates", version)
		assert.Equal(t, host, got.Host)
		assert.Equal(t, int32(port), got.Port)
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "e2e", "1"
	vs, err := av.RequestWith(ctx, admin)
	require.NoError(t, err)
	served := map[int16][2]int16{}
	for _, k := range vs.ApiKeys {
		served[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	assert.Equal(t, [2]int16{4, 18}, served[int16(kmsg.Fetch)], "the proxy's fetch range, which the broker's covers")
	assert.Equal(t, [2]int16{3, 13}, served[int16(kmsg.Produce)], "the broker's produce range")
	assert.Equal(t, [2]int16{0, 13}, served[int16(kmsg.Metadata)])
	assert.Equal(t, [2]int16{0, 4}, served[int16(kmsg.ApiVersions)])
	assert.Equal(t, [2]int16{0, 5}, served[int16(kmsg.EndTxn)], "the broker's transactions, which the proxy routes")
	assert.Equal(t, [2]int16{0, 3}, served[int16(kmsg.AddPartitionsToTxn)], "the proxy routes the client's form of AddPartitionsToTxn")
	assert.Equal(t, [2]int16{0, 4}, served[int16(kmsg.DescribeConfigs)])
	assert.Equal(t, [2]int16{0, 2}, served[int16(kmsg.AlterConfigs)], "the broker's AlterConfigs, which the proxy routes")
	assert.Equal(t, [2]int16{0, 1}, served[int16(kmsg.IncrementalAlterConfigs)], "the broker's IncrementalAlterConfigs")
	_, epochs := served[int16(kmsg.OffsetForLeaderEpoch)]
	assert.False(t, epochs, "nor what the proxy does not route")
}

func coordinatorsOf(resp *kmsg.FindCoordinatorResponse) []kmsg.FindCoordinatorResponseCoordinator {
	if resp.Version >= 4 {
		return resp.Coordinators
	}
	return []kmsg.FindCoordinatorResponseCoordinator{{NodeID: resp.NodeID, Host: resp.Host, Port: resp.Port, ErrorCode: resp.ErrorCode}}
}

// TestProxyKeepsTheClientsVersions has a client limited to Kafka 2.4's
// versions (Produce v8, Fetch v11, FindCoordinator v3, OffsetFetch v6...)
// produce and consume in a group through the proxy, which forwards every
// request at the version the client chose.
func TestProxyKeepsTheClientsVersions(t *testing.T) {
	srv := startBroker(t, func(c *server.Config) { c.GroupInitialRebalance = 0 })
	p := startProxy(t, srv.Addr().String())
	old := kgo.MaxVersions(kversion.V2_4_0())
	admin := proxyClient(t, p, old)
	createTopic(t, admin, "old", 2)
	producer := proxyClient(t, p, old, kgo.DefaultProduceTopic("old"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i := range 50 {
		want = append(want, fmt.Sprint("old-", i))
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte(want[i])}).FirstErr())
	}
	consumer := proxyClient(t, p, old, kgo.ConsumerGroup("old-group"), kgo.ConsumeTopics("old"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(want) {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d", len(got), len(want))
		require.NoError(t, fs.Err0())
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	assert.ElementsMatch(t, want, got)
	require.NoError(t, consumer.CommitUncommittedOffsets(ctx))
	offsets := committedOffsets(t, admin, "old-group", "old", 2)
	assert.Equal(t, int64(len(want)), max(offsets[0], 0)+max(offsets[1], 0), "the group's commits reached the coordinator")
}

// TestProxyKcat: librdkafka (kcat) produces with acks=all and idempotence
// through the proxy, and reads it back, alone and in a group; librdkafka
// reads read_committed by default, which the caches answer where exact.
func TestProxyKcat(t *testing.T) {
	path := kcatPath(t)
	srv := startGroupBroker(t)
	p := startProxy(t, srv.Addr().String())
	b := p.Addr().String()
	in := "one\ntwo\nthree\n"
	kcat(t, path, in, "-b", b, "-P", "-t", "rdk", "-X", "acks=all", "-X", "enable.idempotence=true")
	assert.Equal(t, in, kcat(t, path, "", "-b", b, "-C", "-t", "rdk", "-o", "beginning", "-e", "-q"))
	assert.Equal(t, in, kcat(t, path, "", "-b", b, "-G", "rdk-group", "rdk", "-o", "beginning", "-e", "-q"))
	meta := kcat(t, path, "", "-b", b, "-L", "-t", "rdk")
	assert.Contains(t, meta, "1 brokers:\n  broker 0 at "+b)
	assert.Contains(t, meta, "partition 0, leader 0, replicas: 0, isrs: 0")
}

// TestProxyInFrontOfACluster puts the proxy in front of three brokers, each
// leading one partition of a topic: a producer's requests are split by
// leader, each tail fetcher polls its own broker, and group requests reach
// the coordinator. Every record is read once, in order, by a group and by
// a consumer of directly assigned partitions.
func TestProxyInFrontOfACluster(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.GroupInitialRebalance = 0 })
	p := startProxy(t, strings.Join(c.seeds(), ","))
	admin := proxyClient(t, p)
	const topic, partitions, n = "spread", 3, 600
	createTopic(t, admin, topic, partitions)
	// Every broker must know the topic before the producer starts.
	for id := int32(1); id <= 3; id++ {
		require.Eventually(t, func() bool {
			_, err := c.broker(id).Replica(topic, 0)
			return err == nil
		}, 10*time.Second, 10*time.Millisecond, "broker %d mirrors the topic", id)
	}

	direct, group := newTape(), newTape()
	consume(t, proxyClient(t, p, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}})), direct, false)
	consume(t, proxyClient(t, p, kgo.ConsumerGroup("spread"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), group, false)

	producer := proxyClient(t, p, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	var pr produced
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range n / 30 {
		var recs []*kgo.Record
		for i := range 30 {
			k := round*30 + i
			recs = append(recs, &kgo.Record{Partition: int32(k % partitions), Value: payload(k)})
		}
		for _, r := range producer.ProduceSync(ctx, recs...) {
			require.NoError(t, r.Err)
			pr.add(r.Record)
		}
	}
	require.Eventually(t, func() bool { return direct.len() >= n && group.len() >= n }, 20*time.Second, 10*time.Millisecond)
	for part := int32(0); part < partitions; part++ {
		sameRecords(t, "direct", part, pr.partition(part), direct.partition(part))
		sameRecords(t, "group", part, pr.partition(part), group.partition(part))
	}
	for id := int32(1); id <= 3; id++ {
		assert.Positive(t, metric(t, c.broker(id).Registry(), "broker_requests_total", "api", "Produce"), "broker %d took produces", id)
		assert.Positive(t, metric(t, c.broker(id).Registry(), "broker_requests_total", "api", "Fetch"), "broker %d was fetched from", id)
	}
	assert.Positive(t, metric(t, p.Registry(), "proxy_fetch_partitions_total", "source", "cache"))
}
