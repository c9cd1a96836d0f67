package server

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the proxy's own; the purgatory, the tails and the upstream
// side register theirs on the same registry.
type metrics struct {
	requests    *prometheus.CounterVec   // by api
	latency     *prometheus.HistogramVec // by api
	connections prometheus.Gauge
	panics      prometheus.Counter
	// fetchParts counts the partitions of client fetches by where they
	// were answered from: the cache, or upstream.
	fetchParts  *prometheus.CounterVec
	fromCache   prometheus.Counter
	fromUp      prometheus.Counter
	hits, reads atomic.Int64 // for the hit ratio gauge
	waiting     atomic.Int64 // fetches waiting in the purgatory
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxy_requests_total", Help: "Client requests answered, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "proxy_request_latency_seconds",
			Help:    "From reading a client request to answering it, by API; a long poll counts its wait.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "proxy_connections", Help: "Open client connections.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxy_handler_panics_total", Help: "Request handlers that panicked (the connection was closed).",
		}),
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
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.connections, m.panics, m.fetchParts, ratio, waiting} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(key int16, d time.Duration) {
	name := kmsg.NameForKey(key)
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
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
