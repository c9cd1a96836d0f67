package timer

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDividerMatchesDIV(t *testing.T) {
	divisors := []uint64{1, 2, 3, 7, 10, 20, 400, 1000, 8000, 1_000_000, 3_200_000, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		divisors = append(divisors, rng.Uint64()>>rng.IntN(64)|1, rng.Uint64N(1<<20)+1)
	}
	nums := []uint64{0, 1, 2, 19, 20, 21, 999_999, 1_000_000, 1_000_001, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64 - 1, math.MaxUint64}
	for _, d := range divisors {
		v := newDivider(d)
		for _, n := range append(nums, rng.Uint64(), rng.Uint64()>>rng.IntN(64), d-1, d, d+1, d*3, d*3-1) {
			if got, want := v.div(n), n/d; got != want {
				t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
			}
		}
		if d <= math.MaxInt64 {
			for _, n := range []int64{-1, -int64(d), -int64(d) - 1, 5, int64(d), int64(d) + 1, math.MaxInt64, math.MinInt64} {
				if got, want := v.floor(n), floorDiv(n, int64(d)); got != want {
					t.Fatalf("floor(%d / %d) = %d, want %d", n, d, got, want)
				}
				if got, want := v.ceil(n), ceilDiv(n, int64(d)); got != want {
					t.Fatalf("ceil(%d / %d) = %d, want %d", n, d, got, want)
				}
			}
		}
	}
}

func FuzzDivider(f *testing.F) {
	f.Add(uint64(12345), uint64(20))
	f.Add(uint64(math.MaxUint64), uint64(1_000_000))
	f.Fuzz(func(t *testing.T, n, d uint64) {
		if d == 0 {
			return
		}
		if got, want := newDivider(d).div(n), n/d; got != want {
			t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
		}
	})
}
