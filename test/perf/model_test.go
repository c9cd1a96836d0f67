package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogNormalMatchesRequestedPercentiles(t *testing.T) {
	for _, tc := range []struct{ pct50, pct75 float64 }{
		{500, 750},
		{20, 40},
		{1, 1.1},
	} {
		l := newLogNormal(tc.pct50, tc.pct75)
		r := rand.New(rand.NewPCG(1, 2))
		const n = 100_000
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = l.sample(r)
		}
		slices.Sort(xs)
		// 100k draws put the sample quantiles within about 0.5% of the
		// true ones; 3% leaves room without hiding a wrong sigma.
		assert.InEpsilon(t, tc.pct50, xs[n/2], 0.03, "p50 of %+v", tc)
		assert.InEpsilon(t, tc.pct75, xs[n*3/4], 0.03, "p75 of %+v", tc)
	}
}

func TestPoissonGapsAverageOneOverRate(t *testing.T) {
	for _, rate := range []float64{100, 30_000, 400_000} {
		p := poisson{rate: rate}
		r := rand.New(rand.NewPCG(3, 4))
		const n = 100_000
		var sum, least time.Duration
		for range n {
			g := p.gap(r)
			least = min(least, g)
			sum += g
		}
		require.GreaterOrEqual(t, least, time.Duration(0))
		want := float64(time.Second) / rate
		assert.InEpsilon(t, want, float64(sum)/n, 0.02, "rate %v", rate)
	}
}

func TestKeyPickerDrawsDistinctUniformKeys(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	k := newKeyPicker(names, 3)
	r := rand.New(rand.NewPCG(5, 6))
	counts := map[string]int{}
	const n = 50_000
	for range n {
		keys := k.pick(r)
		if len(keys) != 3 || keys[0] == keys[1] || keys[0] == keys[2] || keys[1] == keys[2] {
			t.Fatalf("keys %q: want 3 distinct", keys)
		}
		for _, key := range keys {
			counts[key]++
		}
	}
	for _, name := range names {
		assert.InEpsilon(t, n*3/len(names), counts[name], 0.03, "key %s", name)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 100_000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	assert.InEpsilon(t, 50*time.Millisecond, h.quantile(0.5), 0.002)
	assert.InEpsilon(t, 99*time.Millisecond, h.quantile(0.99), 0.002)
	assert.Equal(t, 100*time.Millisecond, h.quantile(1))
	s := h.summary()
	assert.Equal(t, uint64(100_000), s.Count)
	assert.InDelta(t, 100.0, s.MaxMS, 1e-9)

	// Small values are exact, and every bucket maps back inside itself.
	for _, v := range []int64{0, 1, 255, 1023, 1024, 1025, 4097, 1 << 40, 1<<63 - 1} {
		i := bucketOf(v)
		require.Less(t, i, histBuckets)
		high := bucketHigh(i)
		require.GreaterOrEqual(t, high, v)
		if v < subCount {
			assert.Equal(t, v, high)
		} else {
			assert.LessOrEqual(t, float64(high-v), float64(v)/halfSub, "v=%d", v)
		}
	}
}
