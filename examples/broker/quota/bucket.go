package quota

import "time"

// bucket is one client's token bucket (Kafka's TokenBucket, KIP-599):
// credit in bytes, refilled at the quota's rate up to all the windows'
// worth, spent by what the client sends; a client in debt is throttled
// until the refill has paid it. Guarded by its Manager's mu.
type bucket struct {
	tokens float64       // may be negative: the debt a throttle pays
	last   time.Duration // when tokens was last brought up to date
	limit  float64       // the quota last refilled at, per second
}

// newBucket returns a full bucket at now: a client's first burst may be
// all the windows' worth, as Kafka's Rate counted a first burst over ten
// windows.
func newBucket(limit float64, now time.Duration, span time.Duration) *bucket {
	return &bucket{tokens: limit * span.Seconds(), last: now, limit: limit}
}

// refill brings tokens up to now at limit per second, to at most limit
// over span. A quota changed by AlterClientQuotas applies from now on.
func (b *bucket) refill(limit float64, now, span time.Duration) {
	if now > b.last {
		b.tokens += limit * (now - b.last).Seconds()
		b.last = now
	}
	b.tokens = min(b.tokens, limit*span.Seconds())
	b.limit = limit
}

// full reports whether the bucket has refilled to the brim by now: a
// client that owes nothing and holds all its credit, whose bucket can be
// dropped and made anew the same.
func (b *bucket) full(now, span time.Duration) bool {
	return b.tokens+b.limit*(now-b.last).Seconds() >= b.limit*span.Seconds()
}
