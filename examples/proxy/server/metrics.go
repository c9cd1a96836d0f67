package server

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's own; the network layer (proxy_requests_total,
// proxy_connections...: package kafkanet), the purgatory, the tails and
// the upstream side register theirs on the same registry.
type metrics struct {
	// fetchParts counts the partitions of client fetches by where they
	// were answered from: the cache, or upstream.
	fetchParts  *prometheus.CounterVec
	fromCache   prometheus.Counter
	fromUp      prometheus.Counter
	hits, reads atomic.Int64 // for the hit ratio gauge
	waiting     atomic.Int64 // fetches waiting in the purgatory
	// woken is the proxy's own latency: from the arrival of an upstream
	// answer with records to the write of each waiting client fetch it
	// woke, without the client's side of the socket.
	woken prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		fetchParts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxy_fetch_partitions_total",
			Help: "Partitions of client fetches, by where they were answered from: cache or upstream.",
		}, []string{"source"}),
	}
	m.fromCache = m.fetchParts.WithLabelValues("cache")
	m.fromUp = m.fetchParts.WithLabelValues("upstream")
	ratio := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "proxy_cache_hit_ratio",
		Help: "Share of client fetch partitions answered from the cache since start (rate proxy_fetch_partitions_total for a window).",
	}, func() float64 {
		if r := m.reads.Load(); r > 0 {
			return float64(m.hits.Load()) / float64(r)
		}
		return 0
	})
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "proxy_fetches_waiting", Help: "Client fetches waiting in the fetch purgatory.",
	}, func() float64 { return float64(m.waiting.Load()) })
	m.woken = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "proxy_upstream_to_client_seconds",
		Help: "From the arrival of an upstream fetch answer with records to the write of each waiting client fetch it woke: the proxy's own latency.",
		// 10µs to ~2.6s.
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 19),
	})
	for _, c := range []prometheus.Collector{m.fetchParts, ratio, waiting, m.woken} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// answered counts a fetch partition answered from the cache or upstream.
func (m *metrics) answered(fromCache bool) {
	m.reads.Add(1)
	if fromCache {
		m.hits.Add(1)
		m.fromCache.Inc()
		return
	}
	m.fromUp.Inc()
}
