package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHistogramQuantiles(t *testing.T) {
	text := `# HELP x_seconds help
x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.002"} 90
x_seconds_bucket{le="0.004"} 100
x_seconds_bucket{le="+Inf"} 100
x_seconds_sum 0.15
x_seconds_count 100
other_bucket{le="1"} 7
`
	bs := histogram(text, "x_seconds")
	assert.Len(t, bs, 4)
	assert.True(t, math.IsInf(bs[3].le, 1))
	assert.InDelta(t, 0.0015, quantile(bs, 0.5), 1e-9, "50th of 100: the middle of the (1ms, 2ms] bucket")
	assert.InDelta(t, 0.0038, quantile(bs, 0.99), 1e-9, "99th: nine tenths into (2ms, 4ms]")
	before := histogram(`x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.002"} 10
x_seconds_bucket{le="0.004"} 10
x_seconds_bucket{le="+Inf"} 10`, "x_seconds")
	d := since(bs, before)
	assert.Equal(t, 90.0, d[3].count)
	assert.InDelta(t, 0.0015625, quantile(d, 0.5), 1e-9, "45th of the 80 in (1ms, 2ms]")
	assert.Zero(t, quantile(nil, 0.5))
}
