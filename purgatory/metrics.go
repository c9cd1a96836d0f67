package purgatory

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopurgatory/purgatory/operation"
)

// metrics are the purgatory's prometheus metrics, each with a constant
// purgatory label, registered on the user's Registerer only.
type metrics struct {
	completions [operation.Closed + 1]prometheus.Counter // by outcome; resolved once
	lateness    prometheus.Histogram
	purges      prometheus.Counter
	purged      prometheus.Counter
	panics      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, name string, watched, delayed func() int) (*metrics, error) {
	labels := prometheus.Labels{"purgatory": name}
	completions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "purgatory_completions_total",
		Help:        "Operations completed, by outcome: completed (condition held), expired, forced, cancelled, closed.",
		ConstLabels: labels,
	}, []string{"outcome"})
	m := &metrics{
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
	collectors := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "purgatory_operations_watched",
			Help:        "Watch entries: an operation counts once per key until purged (Kafka's PurgatorySize).",
			ConstLabels: labels,
		}, func() float64 { return float64(watched()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "purgatory_operations_delayed",
			Help:        "Operations waiting for their deadline (Kafka's NumDelayedOperations).",
			ConstLabels: labels,
		}, func() float64 { return float64(delayed()) }),
		completions, m.lateness, m.purges, m.purged, m.panics,
	}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}
