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
	Request = "request" // metadata.QuotaRequestPercentage, on the time spent on requests
	// Mutation is metadata.QuotaControllerMutationRate, on the partitions
	// created and deleted (Mutations).
	Mutation = "controller_mutation"
)

var keys = map[string]string{Produce: metadata.QuotaProducerByteRate, Fetch: metadata.QuotaConsumerByteRate,
	Request: metadata.QuotaRequestPercentage, Mutation: metadata.QuotaControllerMutationRate}

// Percent is the value a request quota records for d spent on a request
// (Kafka's nanosToPercentage): percent of one thread for a second, so
// that a rate of them is the percentage request_percentage bounds.
func Percent(d time.Duration) float64 { return d.Seconds() * 100 }

// Manager enforces one quota type (Kafka's ClientQuotaManager): it keeps
// a token bucket for each client a quota applies to, and gives the
// throttle time of a request that takes its client over. Safe for
// concurrent use.
type Manager struct {
	typ, key string // immutable
	cfg      config // immutable
	throttle prometheus.Observer

	mu        sync.Mutex // guards the following
	buckets   map[metadata.QuotaEntity]*bucket
	lastSweep time.Duration
}

// New returns the Manager of quota type typ (Produce, Fetch, Request or
// Mutation).
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
	m := &Manager{typ: typ, key: key, cfg: cfg, buckets: make(map[metadata.QuotaEntity]*bucket)}
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

// Record spends value (bytes; for a request quota, Percent) from the bucket q bounds, now, and returns
// the throttle time it takes the refill to pay the client's debt (0 if it
// owes nothing), capped at all the windows' span (see the package
// documentation); a throttle is observed in the metric. O(1).
func (m *Manager) Record(q metadata.ClientQuota, value float64) time.Duration {
	now, span := m.cfg.clock.Now(), m.span()
	m.mu.Lock()
	m.sweepLocked(now)
	b := m.bucketLocked(q, now)
	b.tokens -= value
	debt := -b.tokens
	m.mu.Unlock()
	if debt <= 0 {
		return 0
	}
	d := time.Duration(math.Round(debt / q.Limit * 1000))
	d = min(d*time.Millisecond, span)
	if d > 0 {
		m.throttle.Observe(d.Seconds())
	}
	return d
}

// Unrecord gives value back to the bucket q bounds, as Kafka does for a
// throttled fetch, whose records are not sent. O(1).
func (m *Manager) Unrecord(q metadata.ClientQuota, value float64) {
	now := m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.buckets[q.Scope]; b != nil {
		b.refill(q.Limit, now, m.span())
		b.tokens += value
	}
}

// MaxInWindow returns the most a client under q may be handed at once
// without being throttled whatever else it did: q over all the windows
// but the current one (Kafka's getMaxValueInQuotaWindow), which a
// fetch's max_bytes is capped at.
func (m *Manager) MaxInWindow(q metadata.ClientQuota) float64 {
	return q.Limit * float64(m.cfg.samples-1) * m.cfg.window.Seconds()
}

// Credit returns what the client q bounds may still send now before it is
// throttled, in bytes: negative for a debt its throttle is paying.
func (m *Manager) Credit(q metadata.ClientQuota) float64 {
	now := m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[q.Scope]
	if b == nil {
		return q.Limit * m.span().Seconds()
	}
	b.refill(q.Limit, now, m.span())
	return b.tokens
}

// bucketLocked returns q's bucket, refilled to now, made full if the
// client had none.
//
// REQUIRES: m.mu held.
func (m *Manager) bucketLocked(q metadata.ClientQuota, now time.Duration) *bucket {
	b := m.buckets[q.Scope]
	if b == nil {
		b = newBucket(q.Limit, now, m.span())
		m.buckets[q.Scope] = b
		return b
	}
	b.refill(q.Limit, now, m.span())
	return b
}

// span is all the windows together: a bucket's depth in seconds of its
// quota, and the longest throttle.
func (m *Manager) span() time.Duration { return time.Duration(m.cfg.samples) * m.cfg.window }

// Clients returns how many buckets the Manager holds.
func (m *Manager) Clients() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}

// sweepLocked drops the buckets refilled to the brim (a new one would be
// the same), at most once per all the windows' span: a client in debt
// keeps its bucket until the debt is paid.
//
// REQUIRES: m.mu held.
func (m *Manager) sweepLocked(now time.Duration) {
	span := m.span()
	if now-m.lastSweep < span {
		return
	}
	m.lastSweep = now
	for scope, b := range m.buckets {
		if b.full(now, span) {
			delete(m.buckets, scope)
		}
	}
}
