package test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
	"github.com/gopurgatory/purgatory/operation"
)

// These tests drive the proxy's fetch on the raw wire, against the example
// broker: what a client's fetch waits for, what it gets, and what it gets
// when upstream answers with an error or goes away.

// proxied is a broker, a proxy in front of it, a topic of partitions
// created through the proxy, and a producer writing straight to the broker
// one record per batch.
type proxied struct {
	srv      *server.Server
	stop     func() // stops the broker
	p        *proxy.Server
	admin    *kgo.Client // through the proxy
	producer *kgo.Client // to the broker
	topic    string
}

func newProxied(t *testing.T, topic string, partitions int32, tweak ...func(*proxy.Config)) *proxied {
	t.Helper()
	cfg := server.Default()
	cfg.Listener = "127.0.0.1:0"
	srv, stop := runBroker(t, cfg)
	p := startProxy(t, srv.Addr().String(), tweak...)
	x := &proxied{srv: srv, stop: stop, p: p, admin: proxyClient(t, p), topic: topic}
	createTopic(t, x.admin, topic, partitions)
	x.producer = newClient(t, srv, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression())) // sizes as written
	return x
}

// produce writes one record of size bytes to partition, as a batch of its
// own, and returns its offset.
func (x *proxied) produce(t *testing.T, partition int32, size int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := x.producer.ProduceSync(ctx, &kgo.Record{Partition: partition, Value: bytes.Repeat([]byte{'v'}, size)}).First()
	require.NoError(t, err)
	return r.Offset
}

// tailFrom starts the proxy tailing partition at its end (offset), with a
// fetch that does not wait, and waits until the tail has batches.
func (x *proxied) tailFrom(t *testing.T, partition int32, offset int64) {
	t.Helper()
	c := dialProxy(t, x.p)
	a := onlyPartition(t, c.roundTrip(fetchAt(12, x.topic, [16]byte{}, partition, offset, 0, 1), 10*time.Second))
	require.Zero(t, a.ErrorCode)
	require.Equal(t, offset, a.HighWatermark, "the fetch was at the end")
}

// cachedBatches is how many batches the proxy's tails appended so far.
func (x *proxied) cachedBatches(t *testing.T) float64 {
	return metric(t, x.p.Registry(), "proxy_tail_batches_total")
}

func TestProxyFetchWaitsForMinBytes(t *testing.T) {
	x := newProxied(t, "min-bytes", 1)
	c := dialProxy(t, x.p)
	// Each record is a batch of a little over 1000 bytes: the fetch needs
	// two of them.
	start := time.Now()
	corr := c.send(fetchAt(12, x.topic, [16]byte{}, 0, 0, 10*time.Second, 1500))
	require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond, "the fetch waits on the tail")
	x.produce(t, 0, 1000)
	require.Eventually(t, func() bool { return x.cachedBatches(t) == 1 }, 10*time.Second, time.Millisecond, "the tail appended the first batch")
	x.produce(t, 0, 1000)

	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, c.recv(resp, 10*time.Second))
	a := onlyPartition(t, resp)
	assert.Len(t, batchesIn(t, a.RecordBatches), 2, "answered once both batches were in, not at the first append")
	assert.Equal(t, int64(2), a.HighWatermark)
	assert.Less(t, time.Since(start), 10*time.Second, "answered by the appends, not at max_wait_ms")
	assert.Zero(t, x.p.Stats().WaitingFetches)
	// The proxy's own latency: one woken fetch, observed once written
	// (just after the client may have read it).
	assert.Eventually(t, func() bool { return metric(t, x.p.Registry(), "proxy_upstream_to_client_seconds") == 1 },
		5*time.Second, time.Millisecond)
}

func TestProxyFetchAnswersAtMaxWait(t *testing.T) {
	x := newProxied(t, "max-wait", 1)
	x.produce(t, 0, 10)
	c := dialProxy(t, x.p)
	start := time.Now()
	a := onlyPartition(t, c.roundTrip(fetchAt(12, x.topic, [16]byte{}, 0, 1, 300*time.Millisecond, 1), 10*time.Second))
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "not before max_wait_ms")
	assert.Less(t, took, 3*time.Second, "at max_wait_ms, not much after")
	assert.Zero(t, a.ErrorCode)
	assert.Empty(t, a.RecordBatches, "nothing to read")
	assert.Equal(t, int64(1), a.HighWatermark, "upstream's high watermark")
	assert.Equal(t, int64(1), a.LastStableOffset, "and last stable offset")
	assert.Equal(t, int64(0), a.LogStartOffset, "and log start")
	assert.Equal(t, 1, x.p.Stats().Tailed, "the fetch waited on a tail")
}

func TestProxyFetchHonoursMaxBytes(t *testing.T) {
	x := newProxied(t, "max-bytes", 2)
	x.tailFrom(t, 0, 0)
	x.tailFrom(t, 1, 0)
	for range 3 {
		x.produce(t, 0, 1000)
		x.produce(t, 1, 1000)
	}
	require.Eventually(t, func() bool { return x.cachedBatches(t) == 6 }, 10*time.Second, time.Millisecond, "the tails have every batch")
	both := func(maxBytes, partitionMax int32) *kmsg.FetchRequest {
		req := fetchAt(12, x.topic, [16]byte{}, 0, 0, 0, 1)
		req.MaxBytes = maxBytes
		rp := req.Topics[0].Partitions[0]
		rp.PartitionMaxBytes = partitionMax
		req.Topics[0].Partitions[0] = rp
		rp.Partition = 1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		return req
	}
	tests := []struct {
		name          string
		maxBytes      int32
		partitionMax  int32
		want0, want1  int
		wantFromCache bool
	}{
		{name: "partition_max_bytes takes whole batches that fit", maxBytes: 50 << 20, partitionMax: 2500, want0: 2, want1: 2},
		{name: "max_bytes is shared in request order", maxBytes: 2500, partitionMax: 1 << 20, want0: 2, want1: 0},
		{name: "the first batch whatever its size", maxBytes: 100, partitionMax: 100, want0: 1, want1: 0},
	}
	c := dialProxy(t, x.p)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")
			resp := c.roundTrip(both(tt.maxBytes, tt.partitionMax), 10*time.Second).(*kmsg.FetchResponse)
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 2)
			assert.Len(t, batchesIn(t, resp.Topics[0].Partitions[0].RecordBatches), tt.want0, "partition 0's batches")
			assert.Len(t, batchesIn(t, resp.Topics[0].Partitions[1].RecordBatches), tt.want1, "partition 1's batches")
			assert.Equal(t, 2.0, metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")-before,
				"both partitions read from the cache")
		})
	}
}

func TestProxyFetchPassesUpstreamErrorsOn(t *testing.T) {
	x := newProxied(t, "errors", 1)
	x.produce(t, 0, 10)
	c := dialProxy(t, x.p)
	id := topicID(t, x.admin, x.topic)
	tests := []struct {
		name string
		req  *kmsg.FetchRequest
		want error
	}{
		{name: "past the end", req: fetchAt(12, x.topic, [16]byte{}, 0, 100, 5*time.Second, 1), want: kerr.OffsetOutOfRange},
		{name: "unknown partition", req: fetchAt(12, x.topic, [16]byte{}, 7, 0, 0, 1), want: kerr.UnknownTopicOrPartition},
		{name: "unknown topic", req: fetchAt(12, "no-such-topic", [16]byte{}, 0, 0, 0, 1), want: kerr.UnknownTopicOrPartition},
		{name: "unknown topic id", req: fetchAt(13, "", [16]byte{1, 2, 3}, 0, 0, 0, 1), want: kerr.UnknownTopicID},
		{name: "topic id, past the end", req: fetchAt(13, "", id, 0, 100, 5*time.Second, 1), want: kerr.OffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			a := onlyPartition(t, c.roundTrip(tt.req, 10*time.Second))
			assert.Equal(t, tt.want, kerr.ErrorForCode(a.ErrorCode), "upstream's error")
			assert.Less(t, time.Since(start), 2*time.Second, "at once")
		})
	}

	t.Run("the topic deleted while a fetch waits", func(t *testing.T) {
		start := time.Now()
		corr := c.send(fetchAt(12, x.topic, [16]byte{}, 0, 1, 10*time.Second, 1))
		require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TopicNames = []string{x.topic}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = &x.topic
		req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dresp, err := req.RequestWith(ctx, x.admin)
		require.NoError(t, err)
		require.Zero(t, dresp.Topics[0].ErrorCode)

		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		require.Equal(t, corr, c.recv(resp, 10*time.Second))
		a := onlyPartition(t, resp)
		assert.Equal(t, kerr.UnknownTopicOrPartition, kerr.ErrorForCode(a.ErrorCode), "the broker's answer for a deleted topic")
		assert.Less(t, time.Since(start), 5*time.Second, "when the tail saw it, not at max_wait_ms")
	})
}

func TestProxyFetchBelowTheCacheReadsUpstream(t *testing.T) {
	// A cache of one byte keeps only the newest batch.
	x := newProxied(t, "below", 1, func(c *proxy.Config) { c.CacheBytesPerPartition = 1 })
	x.tailFrom(t, 0, 0)
	for range 5 {
		x.produce(t, 0, 100)
	}
	require.Eventually(t, func() bool { return x.cachedBatches(t) == 5 }, 10*time.Second, time.Millisecond)
	c := dialProxy(t, x.p)
	before := metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "upstream")
	a := onlyPartition(t, c.roundTrip(fetchAt(12, x.topic, [16]byte{}, 0, 0, time.Second, 1), 10*time.Second))
	require.Zero(t, a.ErrorCode)
	bs := batchesIn(t, a.RecordBatches)
	require.Len(t, bs, 5, "upstream has them all")
	assert.Equal(t, int64(0), bs[0].FirstOffset, "from the offset asked for, evicted from the cache")
	assert.Equal(t, 1.0, metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "upstream")-before, "read upstream")

	before = metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")
	a = onlyPartition(t, c.roundTrip(fetchAt(12, x.topic, [16]byte{}, 0, 4, time.Second, 1), 10*time.Second))
	require.Len(t, batchesIn(t, a.RecordBatches), 1)
	assert.Equal(t, 1.0, metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")-before, "the newest batch, from the cache")
}

func TestProxyReadCommittedFromTheCache(t *testing.T) {
	x := newProxied(t, "committed", 1)
	x.tailFrom(t, 0, 0)
	for range 3 {
		x.produce(t, 0, 100)
	}
	require.Eventually(t, func() bool { return x.cachedBatches(t) == 3 }, 10*time.Second, time.Millisecond)
	c := dialProxy(t, x.p)
	req := fetchAt(12, x.topic, [16]byte{}, 0, 0, time.Second, 1)
	req.IsolationLevel = 1
	before := metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")
	a := onlyPartition(t, c.roundTrip(req, 10*time.Second))
	require.Zero(t, a.ErrorCode)
	assert.Len(t, batchesIn(t, a.RecordBatches), 3, "no transaction: the cache answers read_committed exactly")
	assert.Equal(t, int64(3), a.LastStableOffset)
	assert.NotNil(t, a.AbortedTransactions, "an empty list of aborted transactions, as Kafka answers read_committed")
	assert.Empty(t, a.AbortedTransactions)
	assert.Equal(t, 1.0, metric(t, x.p.Registry(), "proxy_fetch_partitions_total", "source", "cache")-before)
}

func TestProxyTailStopsWhenIdle(t *testing.T) {
	x := newProxied(t, "idle", 1, func(c *proxy.Config) { c.TailIdle = 300 * time.Millisecond })
	x.tailFrom(t, 0, 0)
	require.Equal(t, 1, x.p.Stats().Tailed)
	require.Eventually(t, func() bool { return x.p.Stats().Tailed == 0 }, 10*time.Second, 5*time.Millisecond,
		"no client fetch uses it: it stops")
	assert.Equal(t, 1.0, metric(t, x.p.Registry(), "proxy_tails_stopped_total", "reason", "idle"))
	fetchesThen := metric(t, x.srv.Registry(), "broker_requests_total", "api", "Fetch")
	x.produce(t, 0, 10)
	x.tailFrom(t, 0, 1) // the next reader at the end tails it again
	assert.Equal(t, 1, x.p.Stats().Tailed)
	assert.Equal(t, 2.0, metric(t, x.p.Registry(), "proxy_tails_started_total"))
	assert.Positive(t, metric(t, x.srv.Registry(), "broker_requests_total", "api", "Fetch")-fetchesThen)
}

// TestProxyAnswersInRequestOrder pipelines a fetch that waits and a
// metadata request on one connection: the metadata answer, ready first,
// is written after the fetch's, as clients require.
func TestProxyAnswersInRequestOrder(t *testing.T) {
	x := newProxied(t, "order", 1)
	c := dialProxy(t, x.p)
	fetchCorr := c.send(fetchAt(12, x.topic, [16]byte{}, 0, 0, 500*time.Millisecond, 1))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	metaCorr := c.send(meta)
	fresp := kmsg.NewPtrFetchResponse()
	fresp.SetVersion(12)
	require.Equal(t, fetchCorr, c.recv(fresp, 10*time.Second), "the fetch's answer first")
	mresp := kmsg.NewPtrMetadataResponse()
	mresp.SetVersion(12)
	require.Equal(t, metaCorr, c.recv(mresp, 10*time.Second), "then the metadata's")
}

// TestProxyClientDisconnectCompletesItsFetch closes a connection whose
// fetch waits: the connection completes it, so nothing waits for its
// max_wait_ms in the purgatory.
func TestProxyClientDisconnectCompletesItsFetch(t *testing.T) {
	x := newProxied(t, "leaver", 1)
	c := dialProxy(t, x.p)
	c.send(fetchAt(12, x.topic, [16]byte{}, 0, 0, time.Minute, 1))
	require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.nc.Close())
	require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 0 }, 10*time.Second, time.Millisecond,
		"completed when its client left")
	assert.Equal(t, 1.0, metric(t, x.p.Registry(), "purgatory_completions_total", "purgatory", "Fetch", "outcome", operation.ContextDone.String()),
		"by its connection's context, not by its deadline")
}

// TestProxyUpstreamGoneFailsWaitingFetches stops the broker under a fetch
// that waits on a tail: the fetch is answered at once, not at its
// max_wait_ms, and not never (with upstream's last answer, if the broker's
// graceful shutdown answered the proxy's reads, or with a retriable
// error). A fetch after the broker is gone gets the retriable error at once.
func TestProxyUpstreamGoneFailsWaitingFetches(t *testing.T) {
	x := newProxied(t, "gone", 1)
	c := dialProxy(t, x.p)
	corr := c.send(fetchAt(12, x.topic, [16]byte{}, 0, 0, 30*time.Second, 1))
	require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond)
	start := time.Now()
	x.stop()
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, c.recv(resp, 20*time.Second))
	a := onlyPartition(t, resp)
	assert.Less(t, time.Since(start), 10*time.Second, "at once, not at max_wait_ms")
	if a.ErrorCode != 0 {
		assert.Equal(t, kerr.NotLeaderForPartition, kerr.ErrorForCode(a.ErrorCode), "a retriable error")
	}

	start = time.Now()
	a = onlyPartition(t, c.roundTrip(fetchAt(12, x.topic, [16]byte{}, 0, 0, 30*time.Second, 1), 20*time.Second))
	err := kerr.ErrorForCode(a.ErrorCode)
	assert.Equal(t, kerr.NotLeaderForPartition, err, "no broker answers: a retriable error, and the client refreshes its metadata")
	assert.True(t, kerr.IsRetriable(err))
	assert.Less(t, time.Since(start), 5*time.Second, "at once, not at max_wait_ms")
}

// TestProxyCloseAnswersWaitingFetches closes the proxy under a fetch that
// waits: Close answers it, with what its cache holds, before the
// connection goes.
func TestProxyCloseAnswersWaitingFetches(t *testing.T) {
	x := newProxied(t, "closing", 1)
	c := dialProxy(t, x.p)
	corr := c.send(fetchAt(12, x.topic, [16]byte{}, 0, 0, time.Minute, 1))
	require.Eventually(t, func() bool { return x.p.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- x.p.Close(ctx)
	}()
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, c.recv(resp, 10*time.Second), "answered, not dropped")
	a := onlyPartition(t, resp)
	assert.Zero(t, a.ErrorCode)
	assert.Empty(t, a.RecordBatches)
	require.NoError(t, <-closed)
	assert.Zero(t, x.p.Stats().WaitingFetches, "nothing left waiting")
}
