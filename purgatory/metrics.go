package purgatory

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/operation"
)

// metrics are the purgatory's prometheus metrics, each with a constant
// purgatory label, registered on the user's Registerer only, and
// unregistered by Close.
type metrics struct {
	reg         prometheus.Registerer
	collectors  []prometheus.Collector                    // what was registered, for unregister
	completions [lifecycle.NumOutcomes]prometheus.Counter // by outcome; resolved once
	garbage     prometheus.GaugeFunc                      // watch entries of completed operations
	lateness    prometheus.Histogram
	purges      prometheus.Counter
	purged      prometheus.Counter
	panics      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, name string, pending, watched, delayed, garbage func() int) (*metrics, error) {
	labels := prometheus.Labels{"purgatory": name}
	completions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "purgatory_completions_total",
		Help:        "Operations completed, by outcome: completed (condition held), expired, forced, cancelled, closed, rejected (timer full), context_done.",
		ConstLabels: labels,
	}, []string{"outcome"})
	m := &metrics{
		reg: reg,
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "purgatory_expiration_lateness_seconds",
			Help:        "How long after its deadline an expired operation completed.",
			ConstLabels: labels,
			Buckets:     []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .5},
		}),
		purges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "purgatory_purges_total", Help: "Purges of the watcher lists.", ConstLabels: labels,
		}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "purgatory_purged_entries_total", Help: "Watch entries of completed operations dropped by purges.", ConstLabels: labels,
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "purgatory_callback_panics_total", Help: "Operation callbacks that panicked (recovered).", ConstLabels: labels,
		}),
	}
	for _, o := range operation.Outcomes() {
		m.completions[o] = completions.WithLabelValues(o.String())
	}
	gauge := func(name, help string, f func() int) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f()) })
	}
	m.garbage = gauge("purgatory_watch_entries_completed",
		"Watch entries of completed operations not dropped yet: each keeps its operation reachable.", garbage)
	m.collectors = []prometheus.Collector{
		gauge("purgatory_operations_pending",
			"Operations submitted and not yet answered, each once whatever its keys.", pending),
		gauge("purgatory_watch_entries",
			"Watch entries, not operations: an operation counts once per key until its entry is dropped, completed or not (Kafka's PurgatorySize).", watched),
		gauge("purgatory_operations_delayed",
			"Operations waiting for their deadline (Kafka's NumDelayedOperations).", delayed),
		m.garbage,
		completions, m.lateness, m.purges, m.purged, m.panics,
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

// unregister gives the metrics' names back to the Registerer. A nil m has
// nothing to give back.
func (m *metrics) unregister() {
	if m == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
