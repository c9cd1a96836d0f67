package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// TestProxySharesOneUpstreamPollAmongConsumers has 100 consumers, each in
// a group of its own, tail one partition through the proxy. Once all of
// them wait at the end, 20 records are produced one at a time, 50ms
// apart; each record must reach every consumer, and the broker must see
// about one fetch per long-poll round (the tail's poll, answered by the
// append, and the next one), not one per consumer: direct, every record
// would cost the broker 100 fetches.
func TestProxySharesOneUpstreamPollAmongConsumers(t *testing.T) {
	srv := startBroker(t, func(c *server.Config) { c.GroupInitialRebalance = 0 })
	const tailWait = 200 * time.Millisecond
	p := startProxy(t, srv.Addr().String(), func(c *proxy.Config) { c.TailFetchMaxWait = tailWait })
	admin := proxyClient(t, p)
	createTopic(t, admin, "hot", 1)
	producer := newClient(t, srv, kgo.DefaultProduceTopic("hot"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr())

	const consumers, records = 100, 20
	tapes := make([]*tape, consumers)
	for i := range tapes {
		tapes[i] = newTape()
		cl := proxyClient(t, p, kgo.ConsumerGroup(fmt.Sprintf("share-%d", i)), kgo.ConsumeTopics("hot"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))
		consume(t, cl, tapes[i], false)
	}
	all := func(n int) func() bool {
		return func() bool {
			for _, tp := range tapes {
				if tp.len() < n {
					return false
				}
			}
			return true
		}
	}
	require.Eventually(t, all(1), 30*time.Second, 10*time.Millisecond, "every consumer reads the first record")
	require.Eventually(t, func() bool { return p.Stats().WaitingFetches == consumers }, 30*time.Second, 5*time.Millisecond,
		"every consumer waits at the end, in the proxy's purgatory")
	require.Equal(t, 1, p.Stats().Tailed, "one partition tailed for all of them")

	upstreamBefore := metric(t, srv.Registry(), "broker_requests_total", "api", "Fetch")
	clientBefore := metric(t, p.Registry(), "proxy_requests_total", "api", "Fetch")
	start := time.Now()
	for i := range records {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr())
		time.Sleep(50 * time.Millisecond) // the load's pace, not a verdict
	}
	produced := time.Since(start)
	require.Eventually(t, all(1+records), 30*time.Second, 5*time.Millisecond, "every record reaches every consumer")
	t.Logf("produced in %v", produced)
	window := time.Since(start)
	upstream := metric(t, srv.Registry(), "broker_requests_total", "api", "Fetch") - upstreamBefore
	clients := metric(t, p.Registry(), "proxy_requests_total", "api", "Fetch") - clientBefore

	// A round ends with a record or with the tail's max wait.
	rounds := float64(records) + window.Seconds()/tailWait.Seconds() + 1
	t.Logf("%v: %v client fetches answered by the proxy, %v fetches at the broker, %.0f rounds", window, clients, upstream, rounds)
	assert.GreaterOrEqual(t, clients, float64(consumers*records/2), "the consumers fetched once per record or so, each")
	assert.LessOrEqual(t, upstream, 2*rounds, "the broker saw the shared poll's rounds, not the consumers' fetches")
	assert.Positive(t, upstream, "the tail polled the broker")

	// What /metrics says of it.
	assert.Greater(t, metric(t, p.Registry(), "proxy_cache_hit_ratio"), 0.9, "nearly every fetch from the cache")
	assert.Eventually(t, func() bool { return metric(t, p.Registry(), "proxy_fetches_waiting") == consumers }, 10*time.Second,
		5*time.Millisecond, "every consumer waits again")
	assert.Positive(t, metric(t, p.Registry(), "proxy_tail_fetches_total"), "the shared polls")
	assert.Positive(t, metric(t, p.Registry(), "proxy_upstream_requests_total", "api", "Fetch"), "upstream fetches, all kinds")
	assert.Positive(t, metric(t, p.Registry(), "purgatory_completions_total", "purgatory", "Fetch", "outcome", "completed"),
		"the purgatory's own metrics, completed by the tail's appends")
}
