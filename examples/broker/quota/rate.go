package quota

import "time"

// sample is one window of a rate: what was recorded since start.
type sample struct {
	start time.Duration // on the Manager's clock
	value float64
}

// rate is Kafka's Rate over a SampledStat of n samples of window each
// (see the package documentation). Guarded by its Manager's mu.
type rate struct {
	samples []sample // a ring, grown to n; current is the newest
	current int
	last    time.Duration // when the last value was recorded
}

// record adds v at now, starting a new sample if the current one is a
// window old.
func (r *rate) record(v float64, now, window time.Duration, n int) {
	if len(r.samples) == 0 {
		r.samples = append(make([]sample, 0, n), sample{start: now})
	} else if now-r.samples[r.current].start >= window {
		r.current = (r.current + 1) % n
		if r.current == len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.current] = sample{start: now}
		}
	}
	r.samples[r.current].value += v
	r.last = now
}

// measure returns the rate at now, per second, and the time it spans.
// Samples older than all the windows are reset first, as Kafka's
// purgeObsoleteSamples does (to empty samples starting now).
func (r *rate) measure(now, window time.Duration, n int) (perSecond float64, span time.Duration) {
	var (
		sum    float64
		oldest = now
	)
	for i := range r.samples {
		s := &r.samples[i]
		if now-s.start >= time.Duration(n)*window {
			*s = sample{start: now}
		}
		sum += s.value
		oldest = min(oldest, s.start)
	}
	span = now - oldest
	if full := int(span / window); full < n-1 {
		span += time.Duration(n-1-full) * window
	}
	span = max(span, time.Millisecond)
	return sum / span.Seconds(), span
}
