package tail

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	fetches   prometheus.Counter
	appended  prometheus.Counter
	started   prometheus.Counter
	stoppedBy *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, m *Manager) (*metrics, error) {
	mt := &metrics{
		fetches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxy_tail_fetches_total",
			Help: "Long-poll fetches the tails sent upstream: the shared fetches, whatever the number of consumers.",
		}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxy_tail_batches_total", Help: "Record batches the tails appended to their caches.",
		}),
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxy_tails_started_total", Help: "Partitions the proxy started tailing.",
		}),
		stoppedBy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxy_tails_stopped_total", Help: "Tails stopped, by reason (idle, leader_moved, fetch, closed).",
		}, []string{"reason"}),
	}
	if reg == nil {
		return mt, nil
	}
	tailed := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "proxy_tailed_partitions", Help: "Partitions tailed now.",
	}, func() float64 { return float64(m.Len()) })
	cached := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "proxy_cache_bytes", Help: "Bytes of record batches held by the tails' caches.",
	}, func() float64 { return float64(m.cachedBytes()) })
	for _, c := range []prometheus.Collector{mt.fetches, mt.appended, mt.started, mt.stoppedBy, tailed, cached} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return mt, nil
}

func (mt *metrics) stopped(err error) {
	reason := "fetch"
	switch {
	case errors.Is(err, ErrIdle):
		reason = "idle"
	case errors.Is(err, ErrLeaderMoved):
		reason = "leader_moved"
	case errors.Is(err, ErrClosed):
		reason = "closed"
	}
	mt.stoppedBy.WithLabelValues(reason).Inc()
}

// cachedBytes sums the tails' caches: O(tails), on a scrape.
func (m *Manager) cachedBytes() int {
	m.mu.Lock()
	tails := make([]*Tail, 0, len(m.tails))
	for _, t := range m.tails {
		tails = append(tails, t)
	}
	m.mu.Unlock()
	n := 0
	for _, t := range tails {
		_, _, size := t.Cache.Span()
		n += size
	}
	return n
}
