package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// z75 is the 75th percentile of the standard normal distribution: a
// log-normal's 75th percentile is exp(mu + z75*sigma), which gives sigma from
// the two percentiles the user asks for (Kafka's LatencySamples does the same).
const z75 = 0.674490

// logNormal is the completion-latency model: how long after its arrival a
// request's condition comes true.
type logNormal struct{ mu, sigma float64 }

// newLogNormal fits a log-normal whose median is pct50 and whose 75th
// percentile is pct75 (the caller checked pct75 > pct50 > 0).
func newLogNormal(pct50, pct75 float64) logNormal {
	mu := math.Log(pct50)
	return logNormal{mu: mu, sigma: (math.Log(pct75) - mu) / z75}
}

// sample draws one latency, in the unit of the percentiles (ms).
func (l logNormal) sample(r *rand.Rand) float64 {
	return math.Exp(l.mu + l.sigma*r.NormFloat64())
}

// poisson draws the gaps between arrivals of a Poisson process.
type poisson struct{ rate float64 } // arrivals per second

// gap draws the time to the next arrival; its mean is 1/rate.
func (p poisson) gap(r *rand.Rand) time.Duration {
	return time.Duration(r.ExpFloat64() / p.rate * float64(time.Second))
}

// msToDuration converts the model's milliseconds to a Duration.
func msToDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

// keyPicker draws each request's watch keys: distinct, uniform over the key
// space, by a partial Fisher-Yates shuffle of a permutation it keeps between
// draws (any permutation of a uniform one is uniform), so a draw costs O(keys)
// and allocates nothing.
type keyPicker struct {
	names []string // fakeKey0..fakeKeyN-1, built once so no draw formats
	perm  []int
	buf   []string // returned by pick; the purgatory does not keep it
}

func newKeyPicker(names []string, keys int) *keyPicker {
	perm := make([]int, len(names))
	for i := range perm {
		perm[i] = i
	}
	return &keyPicker{names: names, perm: perm, buf: make([]string, keys)}
}

// pick returns len(buf) distinct keys, valid until the next call.
func (k *keyPicker) pick(r *rand.Rand) []string {
	n := len(k.perm)
	for i := range k.buf {
		j := i + r.IntN(n-i)
		k.perm[i], k.perm[j] = k.perm[j], k.perm[i]
		k.buf[i] = k.names[k.perm[i]]
	}
	return k.buf
}
