package quota

import (
	"math"
	"sync"

	"github.com/gopurgatory/purgatory/timer"
)

// Replication is one direction's replication quota (Kafka's
// ReplicationQuotaManager, KIP-73): the rate at which this broker sends
// the replicas it leads to followers out of their ISR
// (leader.replication.throttled.rate), or fetches as a follower out of the
// ISR (follower.replication.throttled.rate), in bytes per second. It
// measures the throttled replicas' bytes with Kafka's SimpleRate (rate.go)
// over quota.window.num windows of quota.window.size.seconds; unlike a
// client quota it gives no throttle time: the replica fetch simply skips a
// throttled partition while the rate is over its limit
// (ShouldThrottle). Safe for concurrent use; a nil *Replication is a
// quota that never throttles.
type Replication struct {
	cfg config // immutable

	mu    sync.Mutex // guards the following
	limit int64      // bytes per second; math.MaxInt64: unthrottled
	rate  simpleRate
}

// NewReplication returns a replication quota without a limit (Kafka's
// default, Long.MAX_VALUE) measured on WithWindows' windows and
// WithClock's clock; other options are ignored.
func NewReplication(opts ...Option) (*Replication, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.clock == nil {
		cfg.clock = timer.NewRealClock()
	}
	return &Replication{cfg: cfg, limit: math.MaxInt64}, nil
}

// SetLimit makes bytesPerSecond the limit, from now on, of the rate
// measured so far and after (Kafka's updateQuota); math.MaxInt64
// unthrottles.
func (r *Replication) SetLimit(bytesPerSecond int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limit = bytesPerSecond
}

// Limit returns the limit in bytes per second, math.MaxInt64 for none.
func (r *Replication) Limit() int64 {
	if r == nil {
		return math.MaxInt64
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limit
}

// Record adds n bytes of throttled replicas to the rate, whether or not
// the quota is exceeded (Kafka records them all, in sync or not: they
// all take the bandwidth the limit shares). O(1).
func (r *Replication) Record(n int) {
	if r == nil || n <= 0 {
		return
	}
	now := r.cfg.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rate.record(float64(n), now, r.cfg.window, r.cfg.samples)
}

// Rate returns the rate measured now, in bytes per second. O(windows).
func (r *Replication) Rate() float64 {
	if r == nil {
		return 0
	}
	now := r.cfg.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rate.measure(now, r.cfg.window, r.cfg.samples)
}

// Exceeded reports whether the rate measured now is over the limit
// (Kafka's isQuotaExceeded: the limit is an upper bound, reached is
// still within it). O(windows); O(1) without a limit.
func (r *Replication) Exceeded() bool {
	if r == nil {
		return false
	}
	now := r.cfg.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limit == math.MaxInt64 {
		return false
	}
	return r.rate.measure(now, r.cfg.window, r.cfg.samples) > float64(r.limit)
}

// ShouldThrottle reports whether a replica is held back now (Kafka's
// shouldLeaderThrottle and shouldFollowerThrottle): its partition is
// listed in the topic's throttled replicas for this broker, the replica is
// not in sync, and the quota is exceeded. An in-sync replica never is, so
// that a throttle cannot make it lag out of the ISR ("to avoid ISR
// thrashing"). The quota is measured last, only when it matters.
func (r *Replication) ShouldThrottle(listed, inSync bool) bool {
	return listed && !inSync && r.Exceeded()
}
