package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serverMetrics are the broker's own metrics; the purgatories register
// theirs on the same registry.
type serverMetrics struct {
	requests    *prometheus.CounterVec   // by api
	latency     *prometheus.HistogramVec // by api: read to answered
	connections prometheus.Gauge
	panics      prometheus.Counter
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "broker_requests_total", Help: "Requests answered, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "broker_request_latency_seconds",
			Help:    "From reading a request to answering it, by API; a long poll counts its wait.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "broker_connections", Help: "Open client connections.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "broker_handler_panics_total", Help: "Request handlers that panicked (the connection was closed).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.connections, m.panics} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *serverMetrics) observe(key int16, d time.Duration) {
	name := kmsg.NameForKey(key)
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
}
