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

	"github.com/gopurgatory/purgatory/internal/lifecycle"
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
// times the larger of its purge interval and a sixteenth of the live
// entries, whichever way they completed. The first case is the issue's: a
// purge interval of 1000 beside 10,000 live operations, which the old rule
// (purge only once completed entries outnumber live ones) let grow to 9,000
// completed operations kept indefinitely; here they stay under 3,000. The
// second has 32,000 live entries and an interval of 100: the limit is then
// a sixteenth of them, 2,000, so that each purge drops at least one entry
// for every 17 it visits.
func TestRetentionIsBoundedWhateverTheLiveCount(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		interval, live, garbage int
		limit                   int // the larger of interval and live/16
	}{
		{name: "interval", interval: 1000, live: 10_000, garbage: 10_000, limit: 1000},
		{name: "live", interval: 100, live: 32_000, garbage: 10_000, limit: 2000},
	} {
		for _, withReaper := range []bool{false, true} {
			t.Run(tc.name+"/reaper="+strconv.FormatBool(withReaper), func(t *testing.T) {
				reg := prometheus.NewPedanticRegistry()
				opts := []Option{WithPurgeInterval(tc.interval), WithRegisterer(reg)}
				var p *Purgatory[string]
				if withReaper {
					var err error
					p, err = New[string](t.Name(), opts...)
					require.NoError(t, err)
					t.Cleanup(func() { _ = p.Close() })
				} else {
					p, _ = newTestPurgatory(t, opts...)
				}
				keep := make([]*mockOp, tc.live)
				for i := range keep {
					keep[i] = newMockOp()
					submit(t, p, keep[i], time.Hour, "live-"+strconv.Itoa(i%100))
				}
				var refs []weak.Pointer[mockOp]
				most, left := 0, 0
				for i := range tc.garbage {
					op := newMockOp()
					// Two keys; completed by neither (forced), or through one, so
					// that the other key's entry is left behind.
					submit(t, p, op, time.Hour, "a-"+strconv.Itoa(i%40), "b-"+strconv.Itoa(i%400))
					if i%2 == 0 {
						op.ForceComplete()
						left += 2
					} else {
						op.completable.Store(true)
						p.CheckAndComplete("a-" + strconv.Itoa(i%40))
						left++
					}
					refs = append(refs, weak.Make(op))
					most = max(most, p.Garbage())
					if i%2500 == 2499 {
						n := reachable(refs)
						require.LessOrEqual(t, n, 3*tc.limit, "after %d completions, %d completed operations are still referenced", i+1, n)
					}
				}
				assert.LessOrEqual(t, most, 3*tc.limit, "garbage entries at most")
				if !withReaper {
					// Each purge drops more than the limit: purging costs
					// O(1) visits per entry left behind, not O(live).
					purges := int(testutil.ToFloat64(p.obs.m.purges))
					assert.LessOrEqual(t, purges, left/tc.limit+1, "purges for %d entries left behind", left)
				}
				t.Logf("garbage entries peaked at %d (limit %d)", most, tc.limit)
				runtime.KeepAlive(keep)
			})
		}
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
	assert.Zero(t, testutil.ToFloat64(p.obs.m.purges), "nothing to purge")
	runtime.KeepAlive(keep)
}

// A purge looks for the entries of the operations completions recorded; an
// entry listed after its operation completed and was looked for (a
// submission racing a ForceComplete) is missed. The garbage count still
// has it, so the purge after one that left garbage past the limit reads
// every entry, and finds it: no garbage is left behind for good.
func TestPurgeFindsEntriesListedAfterTheirOperationCompleted(t *testing.T) {
	p, _ := newTestPurgatory(t, WithPurgeInterval(1))
	var late []*lifecycle.State
	for i := range 8 {
		op := newMockOp()
		s := lifecycle.Lookup(op.OperationState())
		// A submission under two keys, stopped after its first watch.
		done, err := lifecycle.Start(s, op, p.bind, 2)
		require.NoError(t, err)
		require.False(t, done)
		p.w.WatchAll([]string{"a" + strconv.Itoa(i)}, s)
		require.False(t, lifecycle.Listed(s))
		// Completed with two entries counted, one listed: its completion
		// sets off purges, which look for it and find its first entry.
		require.True(t, op.ForceComplete())
		late = append(late, s)
	}
	p.purgeIfIdle(false) // looks for the operations recorded since the last purge
	require.Equal(t, 8, p.Garbage(), "the entries not listed yet")
	for i, s := range late {
		p.w.Watch("b"+strconv.Itoa(i), s) // the rest of each submission
	}
	assert.Equal(t, 8, p.Watched())

	p.purgeIfIdle(false)
	assert.Equal(t, 8, p.Watched(), "missed: their operations were looked for before they were listed")
	p.purgeIfIdle(false)
	assert.Zero(t, p.Watched(), "the purge after one that left garbage past the limit reads every entry")
	assert.Zero(t, p.Garbage())
}

// Completions record their addresses for the next purge only while purges
// come: where checks drop the garbage first (a broker's fetches, completed
// by the appends that check their keys), recording would cost every
// completion and hold memory for a purge that never comes.
func TestAddressesAreRecordedOnlyWhilePurgesCome(t *testing.T) {
	p, _ := newTestPurgatory(t, WithPurgeInterval(10))
	r := p.obs.retention
	recorded := func() int {
		n := 0
		for i := range p.obs.tally.stripes {
			n += len(p.obs.tally.stripes[i].done)
		}
		return n
	}
	for i := range 200 { // completed by a check of their key, which drops them at the next
		op := newMockOp()
		submit(t, p, op, time.Hour, "k")
		op.completable.Store(true)
		require.Equal(t, 1, p.CheckAndComplete("k"), "round %d", i)
	}
	maybePurge(p)
	assert.False(t, r.collecting.Load(), "checks drop the garbage: nothing recorded")
	assert.Zero(t, recorded())

	for i := range 200 { // forced: their entries stay until a purge
		op := newMockOp()
		submit(t, p, op, time.Hour, "f"+strconv.Itoa(i))
		op.ForceComplete()
	}
	assert.True(t, r.collecting.Load(), "purges come: recording again")
	assert.LessOrEqual(t, p.Garbage(), 30, "within the bound")
}
