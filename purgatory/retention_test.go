package purgatory

import (
	"runtime"
	"strconv"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reachable counts the operations behind refs that something still
// references: here, only the purgatory could.
func reachable(refs []weak.Pointer[mockOp]) int {
	runtime.GC()
	n := 0
	for _, r := range refs {
		if r.Value() != nil {
			n++
		}
	}
	return n
}

// The completed operations a purgatory still references stay under three
// times its purge interval however many operations are live, and whichever
// way they completed: here 10,000 live operations and a purge interval of
// 100, which the old rule (purge only once completed entries outnumber
// live ones) let grow to 9,000 completed operations kept indefinitely.
func TestRetentionIsBoundedWhateverTheLiveCount(t *testing.T) {
	const interval, live, garbage = 100, 10_000, 4_000
	for _, withReaper := range []bool{false, true} {
		t.Run("reaper="+strconv.FormatBool(withReaper), func(t *testing.T) {
			opts := []Option{WithPurgeInterval(interval)}
			var p *Purgatory[string]
			if withReaper {
				var err error
				p, err = New[string](t.Name(), opts...)
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
			} else {
				p, _ = newTestPurgatory(t, opts...)
			}
			keep := make([]*mockOp, live)
			for i := range keep {
				keep[i] = newMockOp()
				submit(t, p, keep[i], time.Hour, "live-"+strconv.Itoa(i%100))
			}
			var refs []weak.Pointer[mockOp]
			most := 0
			for i := range garbage {
				op := newMockOp()
				// Two keys; completed by neither (forced), or through one, so
				// that the other key's entry is left behind.
				submit(t, p, op, time.Hour, "a-"+strconv.Itoa(i%40), "b-"+strconv.Itoa(i%400))
				if i%2 == 0 {
					op.ForceComplete()
				} else {
					op.completable.Store(true)
					p.CheckAndComplete("a-" + strconv.Itoa(i%40))
				}
				refs = append(refs, weak.Make(op))
				most = max(most, p.Garbage())
				if i%250 == 249 {
					n := reachable(refs)
					require.LessOrEqual(t, n, 3*interval, "after %d completions, %d completed operations are still referenced", i+1, n)
				}
			}
			assert.LessOrEqual(t, most, 3*interval, "garbage entries at most")
			t.Logf("garbage entries peaked at %d (interval %d)", most, interval)
			runtime.KeepAlive(keep)
		})
	}
}

// With a purge interval of 0, an operation leaves every list as it
// finishes: nothing completed stays referenced, and nothing is purged.
func TestEagerRemovalKeepsNothingCompleted(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, clk := newTestPurgatory(t, WithPurgeInterval(0), WithRegisterer(reg))
	keep := make([]*mockOp, 1000)
	for i := range keep {
		keep[i] = newMockOp()
		submit(t, p, keep[i], time.Hour, "live-"+strconv.Itoa(i%10), "shared")
	}
	var refs []weak.Pointer[mockOp]
	for i := range 300 {
		op := newMockOp()
		submit(t, p, op, time.Duration(1+i%3)*time.Millisecond, "a-"+strconv.Itoa(i%7), "shared")
		switch i % 3 {
		case 0:
			op.ForceComplete()
		case 1:
			op.completable.Store(true)
			p.CheckAndComplete("a-" + strconv.Itoa(i%7))
		case 2: // expires below
		}
		refs = append(refs, weak.Make(op))
	}
	clk.Advance(3 * time.Millisecond)
	assert.Zero(t, reachable(refs), "no completed operation is referenced")
	assert.Equal(t, 2*len(keep), p.Watched(), "only the live entries are listed")
	assert.Zero(t, p.Garbage())
	assert.Zero(t, testutil.ToFloat64(p.m.purges), "nothing to purge")
	runtime.KeepAlive(keep)
}
