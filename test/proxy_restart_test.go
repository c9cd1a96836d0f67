package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProxyUpstreamRestart restarts the broker behind the proxy (on its
// log dir and address) while a producer writes through the proxy and two
// consumers tail through it: one of directly assigned partitions, one in a
// group. Both go on after the retriable errors of the restart: the direct
// consumer reads every acknowledged record once, in order; the group, which
// may re-read what it had not committed, reads every one, in order, with
// no gap. The proxy's tails stopped with the broker and started again.
func TestProxyUpstreamRestart(t *testing.T) {
	const topic, partitions = "restarted", 2
	dir := t.TempDir()
	cfg := durableConfig(dir)
	cfg.GroupInitialRebalance = 0
	srv, stop := runBroker(t, cfg)
	cfg.Listener = srv.Addr().String() // the second broker takes the first's address
	p := startProxy(t, cfg.Listener)
	admin := proxyClient(t, p)
	createTopic(t, admin, topic, partitions)

	direct, group := newTape(), newTape()
	all := map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}
	consume(t, proxyClient(t, p, kgo.ConsumePartitions(all), kgo.FetchMaxWait(time.Second)), direct, true)
	consume(t, proxyClient(t, p, kgo.ConsumerGroup("restart"), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.AutoCommitInterval(100*time.Millisecond)), group, true)

	producer := proxyClient(t, p, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	var pr produced
	var sent atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	produce := func(n int) {
		for range n {
			i := sent.Add(1)
			wg.Add(1)
			producer.Produce(ctx, &kgo.Record{Partition: int32(i % partitions), Value: payload(int(i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if assert.NoError(t, err, "every record is acknowledged, before or after the restart") {
					pr.add(r)
				}
			})
			time.Sleep(2 * time.Millisecond) // a steady stream
		}
	}
	produce(200)
	require.Eventually(t, func() bool { return p.Stats().Tailed == partitions }, 10*time.Second, time.Millisecond, "the consumers tail")
	stopAt := time.Now()
	stop()
	t.Logf("broker stopped in %v", time.Since(stopAt))
	require.Eventually(t, func() bool { return p.Stats().Tailed == 0 }, 10*time.Second, time.Millisecond,
		"the tails stopped with their broker")
	assert.Positive(t, metric(t, p.Registry(), "proxy_tails_stopped_total", "reason", "fetch"), "their fetches failed")
	startedBefore := metric(t, p.Registry(), "proxy_tails_started_total")
	sending := make(chan struct{})
	go func() { defer close(sending); produce(200) }() // into the restart: the producer retries
	_, _ = runBroker(t, cfg)
	<-sending // every record is handed to the producer: wg counts them all
	wg.Wait()
	total := int(sent.Load())

	require.Eventually(t, func() bool { return direct.len() >= total }, 30*time.Second, 10*time.Millisecond,
		"the direct consumer reads everything")
	for part := int32(0); part < partitions; part++ {
		sameRecords(t, "direct", part, pr.partition(part), direct.partition(part))
	}
	require.Eventually(t, func() bool {
		seen := map[string]bool{}
		for part := int32(0); part < partitions; part++ {
			for _, r := range group.partition(part) {
				seen[fmt.Sprint(part, "/", r.Offset)] = true
			}
		}
		return len(seen) == total
	}, 30*time.Second, 10*time.Millisecond, "the group reads everything: %s", groupProgress(admin, "restart", group, total))
	for part := int32(0); part < partitions; part++ {
		want := pr.partition(part)
		got := group.partition(part)
		for i, r := range got {
			require.Equal(t, want[r.Offset].Value, r.Value, "group: partition %d offset %d", part, r.Offset)
			if i > 0 {
				require.LessOrEqual(t, r.Offset, got[i-1].Offset+1, "group: partition %d: no gap after offset %d", part, got[i-1].Offset)
			}
		}
	}
	assert.Greater(t, metric(t, p.Registry(), "proxy_tails_started_total"), startedBefore, "tailed again after the restart")
}

// groupProgress describes how far a group got, for a failure message.
func groupProgress(admin *kgo.Client, group string, tp *tape, total int) fmt.Stringer {
	return stringer(func() string {
		g, ok := groupState(admin, group)
		return fmt.Sprintf("read %d records of %d (partition 0: %d, partition 1: %d); group state %q, %d members (found: %v)",
			tp.len(), total, len(tp.partition(0)), len(tp.partition(1)), g.State, len(g.Members), ok)
	})
}

type stringer func() string

func (s stringer) String() string { return s() }
