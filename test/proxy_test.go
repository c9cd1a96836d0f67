package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// TestProxyConsumersReadEveryRecordOnceInOrder runs producers and
// consumers through the proxy against the example broker at the same time:
// an idempotent producer with acks=all writes 3000 records over three
// partitions while a group of two members, a group of one and a consumer
// of directly assigned partitions read them at the end of the partitions,
// where the proxy's shared tails serve them, and a consumer started half
// way reads from the start, below a cache kept small (16 KiB), from
// upstream, until it catches up with the tails. Each consumer (each group,
// across its members) must read every record once, in offset order, byte
// for byte as produced, and both the caches and upstream must have
// answered.
func TestProxyConsumersReadEveryRecordOnceInOrder(t *testing.T) {
	srv := startBroker(t, func(c *server.Config) { c.GroupInitialRebalance = 0 })
	p := startProxy(t, srv.Addr().String(), func(c *proxy.Config) { c.CacheBytesPerPartition = 16 << 10 })
	admin := proxyClient(t, p)
	const topic, partitions, n = "proxied", 3, 3000
	createTopic(t, admin, topic, partitions)

	type reader struct {
		name string
		tape *tape
	}
	var readers []reader
	start := func(name string, opts ...kgo.Opt) *kgo.Client {
		tp := newTape()
		cl := proxyClient(t, p, append([]kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(time.Second)}, opts...)...)
		consume(t, cl, tp, false)
		readers = append(readers, reader{name, tp})
		return cl
	}
	group := func(g string) []kgo.Opt {
		return []kgo.Opt{kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic), kgo.HeartbeatInterval(100 * time.Millisecond)}
	}
	start("group a, member 1", group("a")...)
	start("group a, member 2", group("a")...)
	start("group b", group("b")...)
	start("direct", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	// Group a shares the partitions before anything is written, so that no
	// rebalance hands a partition over mid-run (what a handover may
	// re-read is the group tests' subject, not the proxy's).
	require.Eventually(t, func() bool {
		g, ok := groupState(admin, "a")
		return ok && g.State == "Stable" && len(g.Members) == 2
	}, 15*time.Second, 10*time.Millisecond, "group a's members share the partitions")

	producer := proxyClient(t, p, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	var pr produced
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Partition: int32(i % partitions), Key: []byte(strconv.Itoa(i)), Value: payload(i),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}}
		wg.Add(1)
		producer.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if assert.NoError(t, err, "produce %s", r.Key) {
				pr.add(r)
			}
		})
		if i%100 == 99 {
			time.Sleep(5 * time.Millisecond) // a steady stream, so consumers tail
		}
		if i == n/2 {
			start("late", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
				0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
		}
	}
	wg.Wait()

	groupA := func() int { return readers[0].tape.len() + readers[1].tape.len() }
	require.Eventually(t, func() bool {
		return groupA() >= n && readers[2].tape.len() >= n && readers[3].tape.len() >= n && readers[4].tape.len() >= n
	}, 20*time.Second, 10*time.Millisecond, "every consumer reads everything")
	for part := int32(0); part < partitions; part++ {
		want := pr.partition(part)
		var a []*kgo.Record
		for _, r := range readers[:2] {
			a = append(a, r.tape.partition(part)...)
		}
		sameRecords(t, "group a", part, want, a)
		for _, r := range readers[2:] {
			sameRecords(t, r.name, part, want, r.tape.partition(part))
		}
	}
	fromCache := metric(t, p.Registry(), "proxy_fetch_partitions_total", "source", "cache")
	fromUpstream := metric(t, p.Registry(), "proxy_fetch_partitions_total", "source", "upstream")
	t.Logf("fetch partitions answered from the cache: %v, from upstream: %v", fromCache, fromUpstream)
	assert.Positive(t, fromCache, "the tails served the consumers at the end")
	assert.Positive(t, fromUpstream, "upstream served the late consumer below the cache")
}
