package main

import (
	"sort"
	"strconv"
	"strings"
)

// bucket is a Prometheus histogram bucket: the count of observations at
// most le.
type bucket struct {
	le    float64
	count float64
}

// histogram reads the buckets of histogram name from a /metrics text,
// by le.
func histogram(text, name string) []bucket {
	var out []bucket
	prefix := name + `_bucket{le="`
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		l, err1 := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		v, err2 := strconv.ParseFloat(value, 64)
		if err1 == nil && err2 == nil {
			out = append(out, bucket{l, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out
}

// since returns the observations of after that came after before (the
// same histogram, scraped earlier).
func since(after, before []bucket) []bucket {
	out := make([]bucket, len(after))
	for i, b := range after {
		out[i] = b
		if i < len(before) && before[i].le == b.le {
			out[i].count -= before[i].count
		}
	}
	return out
}

// quantile estimates quantile q (0..1) of cumulative buckets, by linear
// interpolation inside the bucket it falls in, as Prometheus'
// histogram_quantile does; 0 without observations. The +Inf bucket
// answers its lower bound.
func quantile(bs []bucket, q float64) float64 {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return 0
	}
	rank := q * bs[len(bs)-1].count
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if b.le > 1e300 || b.count == below {
				return lo
			}
			return lo + (b.le-lo)*(rank-below)/(b.count-below)
		}
		lo, below = b.le, b.count
	}
	return lo
}
