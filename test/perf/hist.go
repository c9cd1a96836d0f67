package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram records durations in log-linear buckets (HdrHistogram's layout):
// exact below subCount ns, then subCount/2 buckets per power of two, so a
// reported percentile is within 1/subCount (0.1%) of the true value. Its size
// is fixed (about 224 KiB), unlike a slice of every sample (8 MB a million),
// so it does not weigh on the peak heap it helps to measure. Goroutines record
// concurrently.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
}

const (
	subBits     = 10
	subCount    = 1 << subBits
	halfSub     = subCount / 2
	histBuckets = subCount + (64-subBits)*halfSub // covers every int64
)

// bucketOf maps a value in ns to its bucket.
func bucketOf(v int64) int {
	if v < subCount {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - subBits // >= 1: v has more than subBits bits
	m := int(uint64(v) >> e)             // the top subBits bits, in [halfSub, subCount)
	return subCount + (e-1)*halfSub + m - halfSub
}

// bucketHigh returns the largest value of bucket i, the value a percentile
// reports (as HdrHistogram does): a reported percentile is never below the
// true one, and a cap such as the timeout reads as itself.
func bucketHigh(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	j := i - subCount
	e := j/halfSub + 1
	m := int64(j%halfSub + halfSub)
	return m<<e + (int64(1)<<e - 1)
}

func (h *histogram) record(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// merge adds o's samples to h. Call it once recording into o has finished.
func (h *histogram) merge(o *histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	for v := o.max.Load(); ; {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// quantile returns the value below which a fraction q of the samples lie.
// Call it once recording has finished.
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	if rank == n {
		return time.Duration(h.max.Load()) // known exactly
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			// A bucket's top can lie above the largest sample in it.
			return time.Duration(min(bucketHigh(i), h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// percentiles is a histogram's summary as reported, in ms.
type percentiles struct {
	Count  uint64  `json:"count"`
	P50MS  float64 `json:"p50_ms"`
	P75MS  float64 `json:"p75_ms"`
	P99MS  float64 `json:"p99_ms"`
	P999MS float64 `json:"p999_ms"`
	MaxMS  float64 `json:"max_ms"`
}

func (h *histogram) summary() percentiles {
	return percentiles{
		Count:  h.n.Load(),
		P50MS:  ms(h.quantile(0.50)),
		P75MS:  ms(h.quantile(0.75)),
		P99MS:  ms(h.quantile(0.99)),
		P999MS: ms(h.quantile(0.999)),
		MaxMS:  ms(time.Duration(h.max.Load())),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
