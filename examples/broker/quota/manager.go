package quota

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/timer"
)

// The quota types a broker enforces, the label of their throttle metric
// (Kafka's QuotaType), and the key of each.
const (
	Produce = "produce" // metadata.QuotaProducerByteRate, on Produce request bytes
	Fetch   = "fetch"   // metadata.QuotaConsumerByteRate, on Fetch response bytes
)

var keys = map[string]string{Produce: metadata.QuotaProducerByteRate, Fetch: metadata.QuotaConsumerByteRate}

// Manager enforces one quota type (Kafka's ClientQuotaManager): it
// measures the rate of each client a quota applies to, and gives the
// throttle time of a request that takes its client over. Safe for
// concurrent use.
type Manager struct {
	typ, key string // immutable
	cfg      config // immutable
	throttle prometheus.Observer

	mu        sync.Mutex // guards the following
	rates     map[metadata.QuotaEntity]*rate
	lastSweep time.Duration
}

// New returns the Manager of quota type typ (Produce or Fetch).
func New(typ string, opts ...Option) (*Manager, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	key, ok := keys[typ]
	if !ok {
		return nil, ErrInvalidConfig
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.clock == nil {
		cfg.clock = timer.NewRealClock()
	}
	m := &Manager{typ: typ, key: key, cfg: cfg, rates: make(map[metadata.QuotaEntity]*rate)}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        cfg.ns + "_quota_throttle_time_seconds",
		Help:        "Throttle times given to clients over their quota (the connection muted, throttle_time_ms answered), by quota type.",
		ConstLabels: prometheus.Labels{"type": typ},
		Buckets:     prometheus.ExponentialBuckets(0.001, 4, 9),
	})
	if cfg.reg != nil {
		if err := cfg.reg.Register(h); err != nil {
			return nil, err
		}
	}
	m.throttle = h
	return m, nil
}

// Type returns the Manager's quota type.
func (m *Manager) Type() string { return m.typ }

// Quota returns the quota of the Manager's type that applies to the
// client (user, clientID) in im; ok is false if none does.
func (m *Manager) Quota(im *metadata.Image, user, clientID string) (q metadata.ClientQuota, ok bool) {
	return im.ClientQuota(m.key, user, clientID)
}

// Record adds value (bytes) to the rate q bounds, now, and returns the
// throttle time it takes its client to fall back within q (0 if it is
// within), capped at all the windows' span (see the package
// documentation); a throttle is observed in the metric. O(samples).
func (m *Manager) Record(q metadata.ClientQuota, value float64) time.Duration {
	now := m.cfg.clock.Now()
	window, n := m.cfg.window, m.cfg.samples
	m.mu.Lock()
	m.sweepLocked(now)
	r := m.rates[q.Scope]
	if r == nil {
		r = &rate{}
		m.rates[q.Scope] = r
	}
	r.record(value, now, window, n)
	observed, span := r.measure(now, window, n)
	m.mu.Unlock()
	if observed <= q.Limit {
		return 0
	}
	d := time.Duration(math.Round((observed - q.Limit) / q.Limit * float64(span.Milliseconds())))
	d = min(d*time.Millisecond, time.Duration(n)*window)
	if d > 0 {
		m.throttle.Observe(d.Seconds())
	}
	return d
}

// Unrecord takes value back from the rate q bounds, as Kafka does for a
// throttled fetch, whose records are not sent. O(samples).
func (m *Manager) Unrecord(q metadata.ClientQuota, value float64) {
	now := m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.rates[q.Scope]; r != nil {
		r.record(-value, now, m.cfg.window, m.cfg.samples)
	}
}

// MaxInWindow returns the most a client under q may be handed at once
// without being throttled whatever else it did: q over all the windows
// but the current one (Kafka's getMaxValueInQuotaWindow), which a
// fetch's max_bytes is capped at.
func (m *Manager) MaxInWindow(q metadata.ClientQuota) float64 {
	return q.Limit * float64(m.cfg.samples-1) * m.cfg.window.Seconds()
}

// Rate returns the rate q bounds, per second, now: what Record compares
// with the quota.
func (m *Manager) Rate(q metadata.ClientQuota) float64 {
	now := m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rates[q.Scope]
	if r == nil {
		return 0
	}
	v, _ := r.measure(now, m.cfg.window, m.cfg.samples)
	return v
}

// Clients returns how many rates the Manager holds.
func (m *Manager) Clients() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rates)
}

// sweepLocked drops the rates idle for all the windows (they count
// nothing), at most once per that span.
//
// REQUIRES: m.mu held.
func (m *Manager) sweepLocked(now time.Duration) {
	span := time.Duration(m.cfg.samples) * m.cfg.window
	if now-m.lastSweep < span {
		return
	}
	m.lastSweep = now
	for scope, r := range m.rates {
		if now-r.last >= span {
			delete(m.rates, scope)
		}
	}
}
