package quota

import "time"

// sample is one window of a simpleRate: what was recorded from start on.
type sample struct {
	start time.Duration
	total float64
}

// simpleRate is Kafka's SimpleRate over a SampledTotal: up to n windows
// of one window size each, the current one taking what is recorded until
// a window has passed since it began; a window older than all the
// windows' span is forgotten. The rate is the windows' total over the time
// since the oldest began, but over at least one window, so that the first
// records do not read as a huge rate. Not safe for concurrent use: its
// owner locks it.
type simpleRate struct {
	samples []sample // at most n, reused in turn
	current int      // the index of the window recording now
}

// record adds v at now. O(1).
func (r *simpleRate) record(v float64, now, window time.Duration, n int) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
		r.current = 0
	}
	if now-r.samples[r.current].start >= window {
		// Kafka's SampledStat.advance: the next window, made anew or
		// reused, begins now.
		r.current = (r.current + 1) % n
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.current] = sample{start: now}
		}
	}
	r.samples[r.current].total += v
}

// measure returns the rate at now, per second. O(n).
func (r *simpleRate) measure(now, window time.Duration, n int) float64 {
	span := time.Duration(n) * window
	oldest, total := now, 0.0
	for i := range r.samples {
		s := &r.samples[i]
		if now-s.start >= span {
			*s = sample{start: now} // Kafka's purgeObsoleteSamples
		}
		total += s.total
		oldest = min(oldest, s.start)
	}
	return total / max(now-oldest, window).Seconds()
}
