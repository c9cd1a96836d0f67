package test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestProxyShareGroup has franz-go share consumers (KIP-932) read through
// the proxy: ApiVersions through it offers the KIP-848 and share-group
// APIs, two consumers of one group share 200 records of three partitions,
// each accepted once, the group is described through the proxy, and once
// they close it is empty and no share fetch waits upstream.
func TestProxyShareGroup(t *testing.T) {
	srv := startBroker(t, func(c *server.Config) { c.GroupInitialRebalance = 0 })
	startProxyShareGroup(t, srv.Addr().String(), func() map[string]server.PurgatorySize { return srv.PurgatorySizes() },
		[]*kgo.Client{newClient(t, srv)})
}

// TestProxyShareGroupAcrossLeaders is TestProxyShareGroup against three
// brokers, the partitions led by different ones: the consumers' one share
// session with the proxy is one share session per upstream leader.
func TestProxyShareGroupAcrossLeaders(t *testing.T) {
	c := startCluster(t, 3)
	var addrs []string
	for _, b := range c.brokers {
		addrs = append(addrs, b.Addr().String())
	}
	startProxyShareGroup(t, addrs[0]+","+addrs[1]+","+addrs[2], func() map[string]server.PurgatorySize {
		sum := map[string]server.PurgatorySize{}
		for _, b := range c.brokers {
			for k, v := range b.PurgatorySizes() {
				s := sum[k]
				s.Pending += v.Pending
				s.Watched += v.Watched
				sum[k] = s
			}
		}
		return sum
	}, []*kgo.Client{newClient(t, c.brokers[0]), newClient(t, c.brokers[1]), newClient(t, c.brokers[2])})
}

// startProxyShareGroup runs the share consumers' test through a proxy in
// front of upstream; sizes sums the brokers' purgatories, and direct holds
// a client of each broker, to set the group's configs on each: a broker
// keeps its own (the broker's share_configs.go), and the share partitions
// of the group live on their leaders.
func startProxyShareGroup(t *testing.T, upstream string, sizes func() map[string]server.PurgatorySize, direct []*kgo.Client) {
	const records, topic, group = 200, "proxy-share", "proxy-share-group"
	p := startProxy(t, upstream)
	admin := proxyClient(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, admin)
	require.NoError(t, err)
	offered := map[int16]bool{}
	for _, k := range versions.ApiKeys {
		offered[k.ApiKey] = true
	}
	for _, key := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.ShareGroupHeartbeat,
		kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.DescribeShareGroupOffsets,
		kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets} {
		assert.True(t, offered[int16(key)], "the proxy offers %v", key)
	}

	createTopic(t, admin, topic, 3)
	if len(direct) > 1 {
		leaders := map[int32]bool{}
		eventually(t, func() bool {
			md := kmsg.NewPtrMetadataRequest()
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
			resp, err := md.RequestWith(ctx, direct[0])
			if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
				return false
			}
			clear(leaders)
			for _, p := range resp.Topics[0].Partitions {
				leaders[p.Leader] = true
			}
			return len(leaders) > 1
		}, "the partitions have several leaders upstream")
	}
	// The group's config is set at each broker itself rather than once
	// through the proxy (which forwards it to any broker,
	// test/proxy_configs_test.go): a broker answers once it has applied
	// the change, so every partition's leader has it before the
	// consumers start.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	for i, cl := range direct {
		resp, err := cl.Broker(i+1).Request(ctx, alter) // this broker itself
		require.NoError(t, err)
		require.Zero(t, resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)
	}

	producer := proxyClient(t, p, kgo.DefaultProduceTopic(topic))
	for i := range records {
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i % 3)},
			func(_ *kgo.Record, err error) { assert.NoError(t, err) })
	}
	require.NoError(t, producer.Flush(ctx))

	var (
		mu       sync.Mutex
		accepted = make(map[string]int)
	)
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	var wg sync.WaitGroup
	var consumers []*kgo.Client
	for range 2 {
		cl := proxyClient(t, p, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
		consumers = append(consumers, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pollCtx.Err() == nil {
				for _, r := range cl.PollFetches(pollCtx).Records() {
					r.Ack(kgo.AckAccept)
					mu.Lock()
					accepted[string(r.Value)]++
					mu.Unlock()
				}
			}
		}()
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == records
	}, 50*time.Second, 10*time.Millisecond, "every record accepted through the proxy")

	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs = []string{group}
	d, err := describe.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Len(t, d.Groups, 1)
	assert.Zero(t, d.Groups[0].ErrorCode)
	assert.NotEmpty(t, d.Groups[0].Members, "described through the proxy")
	stopPolling()
	wg.Wait()

	for _, cl := range consumers {
		cl.Close()
	}
	eventually(t, func() bool {
		d, err := describe.RequestWith(ctx, admin)
		return err == nil && len(d.Groups) == 1 && d.Groups[0].GroupState == "Empty"
	}, "the consumers left the group")
	eventually(t, func() bool { return sizes()["ShareFetch"] == server.PurgatorySize{} }, "no share fetch left waiting upstream")

	mu.Lock()
	defer mu.Unlock()
	for i := range records {
		assert.Equal(t, 1, accepted[strconv.Itoa(i)], "record %d accepted once", i)
	}
}
