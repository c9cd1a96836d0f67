package quota

import (
	"math"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// Mutations is one request's controller mutation quota (Kafka's
// ControllerMutationQuota, KIP-599): the partitions a CreateTopics,
// CreatePartitions or DeleteTopics creates or deletes are charged to its
// client's bucket, one token a partition, topic by topic, as the request
// is served. It lives as long as its request, on its handler's goroutine:
// not safe for concurrent use (the bucket it charges is, under its
// Manager's lock).
//
// A strict one (the versions that know THROTTLING_QUOTA_EXCEEDED) refuses
// a topic while its client owes anything, and charges nothing for it; a
// permissive one (older versions) takes every topic, and only throttles.
//
// A nil *Mutations is the quota of a client no controller_mutation_rate
// applies to (Kafka's UnboundedControllerMutationQuota): it takes every
// mutation and never throttles.
type Mutations struct {
	m      *Manager // immutable
	q      metadata.ClientQuota
	strict bool
	// throttle is the last violation's throttle, as of at on the
	// Manager's clock.
	throttle time.Duration
	at       time.Duration
}

// Mutations returns the mutation quota of one request of the client q
// bounds: strict, or permissive. O(1), charges nothing.
func (m *Manager) Mutations(q metadata.ClientQuota, strict bool) *Mutations {
	return &Mutations{m: m, q: q, strict: strict}
}

// Record charges n partition mutations, and reports whether they may be
// made. Strict, as Kafka's StrictControllerMutationQuota: while the
// client owes nothing they are taken whole, however far past its credit
// that takes it (so a client's debt is at most what one topic costs);
// while it owes, they are refused uncharged (the topic is answered
// THROTTLING_QUOTA_EXCEEDED), and the request is throttled for the time
// the refill takes to pay the debt. Permissive: always taken, and a debt
// after them throttles the request. Nil: always taken. O(1).
func (u *Mutations) Record(n int) bool {
	if u == nil {
		return true
	}
	taken, debt, now := u.m.take(u.q, float64(n), u.strict)
	if debt > 0 && (!taken || !u.strict) {
		// Kafka's throttleTimeMs: the debt at the quota's rate, in whole
		// milliseconds, not capped at the windows' span.
		u.throttle = time.Duration(math.Round(debt/u.q.Limit*1000)) * time.Millisecond
		u.at = now
	}
	return taken
}

// Throttle returns the time the request's client must wait: the last
// violation's throttle less the time since (Kafka's throttleTime), 0 if
// there was none. O(1).
func (u *Mutations) Throttle() time.Duration {
	if u == nil {
		return 0
	}
	return max(0, u.throttle-(u.m.cfg.clock.Now()-u.at))
}

// Answer is Throttle for the request's answer: a throttle is observed in
// the Manager's metric. Call it once, as the request is answered.
func (u *Mutations) Answer() time.Duration {
	d := u.Throttle()
	if d > 0 {
		u.m.throttle.Observe(d.Seconds())
	}
	return d
}

// take charges value to q's bucket now, unless strict and the client
// already owes (Kafka's Sensor.checkQuotas before record); it reports
// whether it charged, and the client's debt after (0 if none).
func (m *Manager) take(q metadata.ClientQuota, value float64, strict bool) (taken bool, debt float64, now time.Duration) {
	now = m.cfg.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	b := m.bucketLocked(q, now)
	if strict && b.tokens < 0 {
		return false, -b.tokens, now
	}
	b.tokens -= value
	return true, max(0, -b.tokens), now
}

// Unrecord gives n mutations back to the bucket: ones Record charged
// that were then not made (a topic the controller refused after its
// quota was charged, which Kafka's controller never charges). Nil:
// nothing. O(1).
func (u *Mutations) Unrecord(n int) {
	if u != nil {
		u.m.Unrecord(u.q, float64(n))
	}
}
