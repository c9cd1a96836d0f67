package timer

import "math/bits"

// divider divides unsigned 64-bit numbers by a divisor fixed at run time, by
// a multiplication and shifts instead of a DIV instruction (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994).
// A DIV costs 25 to 90 cycles; the wheel needs three per Schedule (deadline to
// tick, tick to bucket, bucket to slot), which was a fifth of its cost.
type divider struct {
	d     uint64
	m     uint64 // magic multiplier; 0 for a power of two
	shift uint8
}

func newDivider(d uint64) divider {
	if d == 0 {
		panic("timer: division by zero")
	}
	if d&(d-1) == 0 {
		return divider{d: d, shift: uint8(bits.TrailingZeros64(d))}
	}
	// 2^(l-1) < d < 2^l, so 2^l - d < d and the 128-by-64 division fits.
	l := uint(bits.Len64(d))
	m, _ := bits.Div64((uint64(1)<<l)-d, 0, d) // (1<<64)-d wraps to the right value when l = 64
	return divider{d: d, m: m + 1, shift: uint8(l - 1)}
}

// div returns n / d.
func (v divider) div(n uint64) uint64 {
	if v.m == 0 {
		return n >> v.shift
	}
	t, _ := bits.Mul64(v.m, n)
	return (t + (n-t)>>1) >> v.shift
}

// floor returns ⌊n / d⌋ for signed n.
func (v divider) floor(n int64) int64 {
	if n >= 0 {
		return int64(v.div(uint64(n)))
	}
	return floorDiv(n, int64(v.d))
}

// ceil returns ⌈n / d⌉ for signed n.
func (v divider) ceil(n int64) int64 {
	if n <= 0 {
		return ceilDiv(n, int64(v.d))
	}
	q := v.div(uint64(n))
	if q*v.d != uint64(n) {
		q++
	}
	return int64(q)
}

// floorDiv and ceilDiv round a / b (b > 0) towards -∞ and +∞ without
// overflowing.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}
