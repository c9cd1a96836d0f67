package upstream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the upstream side's: what the proxy costs the cluster.
type metrics struct {
	requests *prometheus.CounterVec // by api
	conns    prometheus.Gauge
	failures *prometheus.CounterVec // by reason
	byKey    map[int16]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxy_upstream_requests_total",
			Help: "Requests the proxy sent upstream, by API: its tail fetches, what it forwards, its own metadata.",
		}, []string{"api"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "proxy_upstream_connections", Help: "Open connections to upstream brokers.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxy_upstream_connection_failures_total",
			Help: "Upstream connections that failed, by reason (dial, timeout, protocol, io).",
		}, []string{"reason"}),
		byKey: make(map[int16]prometheus.Counter),
	}
	// Every key's counter exists from the start, so that rates are
	// defined before the first request, and the hot path allocates no
	// label lookup.
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if name := kmsg.NameForKey(k); name != "Unknown" {
			m.byKey[k] = m.requests.WithLabelValues(name)
		}
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.conns, m.failures} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) sent(key int16) {
	if c := m.byKey[key]; c != nil {
		c.Inc()
	}
}

func (m *metrics) failure(err error) {
	reason := "io"
	switch {
	case errors.Is(err, ErrTimeout):
		reason = "timeout"
	case errors.Is(err, ErrProtocol):
		reason = "protocol"
	case errors.Is(err, errDial), errors.Is(err, ErrBackoff):
		reason = "dial"
	}
	m.failures.WithLabelValues(reason).Inc()
}
