package kafkanet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the connections' and requests' metrics, named
// <namespace>_requests_total, ..._request_latency_seconds,
// ..._connections, ..._handler_panics_total, ..._authentications_total,
// ..._connections_muted.
type metrics struct {
	requests    *prometheus.CounterVec   // by api
	latency     *prometheus.HistogramVec // by api: read to answered
	connections prometheus.Gauge
	panics      prometheus.Counter
	auths       *prometheus.CounterVec // by mechanism and result
	muted       prometheus.Gauge       // readers held by a throttle (throttle.go)
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: namespace + "_requests_total", Help: "Requests answered, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    namespace + "_request_latency_seconds",
			Help:    "From reading a request to answering it, by API; a long poll counts its wait.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: namespace + "_connections", Help: "Open client connections.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: namespace + "_handler_panics_total", Help: "Request handlers that panicked (the connection was closed).",
		}),
		auths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: namespace + "_authentications_total",
			Help: "SASL authentications, by mechanism and result (success, failure, unsupported_mechanism, unsupported_version, illegal_state).",
		}, []string{"mechanism", "result"}),
		muted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: namespace + "_connections_muted",
			Help: "Connections whose reader a quota's throttle holds (KIP-219): no request is read from them until it ends.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.connections, m.panics, m.auths, m.muted} {
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

func (m *metrics) authentication(mechanism, result string) {
	m.auths.WithLabelValues(mechanism, result).Inc()
}

// registerReadersWaiting registers <namespace>_readers_waiting, the
// readers stopped for memory, by the limit they wait on: the budget
// (queued.max.request.bytes), their host's share (.per.ip).
func (s *Server) registerReadersWaiting(reg prometheus.Registerer) error {
	for limit, waiting := range map[string]func() int{
		"queued.max.request.bytes":        s.mem.waiting,
		"queued.max.request.bytes.per.ip": s.shares.readersWaiting,
	} {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        s.cfg.namespace + "_readers_waiting",
			Help:        "Connections whose reader has stopped reading its socket to wait for memory, by the limit it waits on.",
			ConstLabels: prometheus.Labels{"limit": limit},
		}, func() float64 { return float64(waiting()) })); err != nil {
			return err
		}
	}
	return nil
}
