package quota

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

func newTestReplication(t *testing.T, limit int64) (*Replication, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(time.Hour)
	r, err := NewReplication(WithClock(clk))
	require.NoError(t, err)
	r.SetLimit(limit)
	return r, clk
}

// TestReplicationRate: the rate is Kafka's SimpleRate over
// quota.window.num windows of quota.window.size: the bytes of the
// windows kept, over the time since the oldest began, but at least one
// window; a window falls out once all the windows' span has passed it.
func TestReplicationRate(t *testing.T) {
	r, clk := newTestReplication(t, 1000)
	assert.Zero(t, r.Rate(), "nothing recorded")
	r.Record(500)
	assert.InDelta(t, 500, r.Rate(), 1e-9, "the first window counts as a whole one")
	clk.Advance(500 * time.Millisecond)
	assert.InDelta(t, 500, r.Rate(), 1e-9, "still within the first window")
	clk.Advance(1500 * time.Millisecond) // 2s since the first sample began
	r.Record(1500)
	assert.InDelta(t, 1000, r.Rate(), 1e-9, "2000 bytes over 2s")
	clk.Advance(8 * time.Second) // 10s
	assert.InDelta(t, 200, r.Rate(), 1e-9, "2000 bytes over 10s")
	clk.Advance(time.Second) // 11s: the first window expires
	assert.InDelta(t, 1500.0/9, r.Rate(), 1e-9, "1500 bytes over the 9s since the second window began")
	clk.Advance(2 * time.Second) // 13s: the second expires too
	assert.Zero(t, r.Rate(), "every window expired")
}

// TestReplicationExceeded: the quota is exceeded while the measured rate
// is above the limit (Kafka's Quota.acceptable, an upper bound), whatever
// recorded it; a limit of Long.MAX_VALUE (Kafka's default) is never
// exceeded, and a new limit applies to what was measured already.
func TestReplicationExceeded(t *testing.T) {
	r, clk := newTestReplication(t, 1000)
	r.Record(500)
	assert.False(t, r.Exceeded(), "500 B/s under 1000")
	r.Record(600)
	assert.True(t, r.Exceeded(), "1100 B/s over 1000")
	clk.Advance(time.Second)
	assert.True(t, r.Exceeded(), "1100 B over one second")
	clk.Advance(time.Second)
	assert.False(t, r.Exceeded(), "1100 B over two seconds")
	r.SetLimit(500)
	assert.True(t, r.Exceeded(), "a lower limit applies to what was measured")
	assert.Equal(t, int64(500), r.Limit())
	r.SetLimit(math.MaxInt64)
	r.Record(1 << 40)
	assert.False(t, r.Exceeded(), "Long.MAX_VALUE: unthrottled")

	var none *Replication
	none.Record(1 << 20)
	assert.False(t, none.Exceeded(), "no quota: never exceeded")
	assert.Equal(t, int64(math.MaxInt64), none.Limit())
}

// TestShouldThrottle: a replica is throttled only if its partition is
// listed, it is out of the ISR and the quota is exceeded (Kafka's
// shouldLeaderThrottle and shouldFollowerThrottle): an in-sync replica
// never is, so that a throttle cannot shrink the ISR.
func TestShouldThrottle(t *testing.T) {
	r, _ := newTestReplication(t, 100)
	for _, tc := range []struct {
		name                     string
		listed, inSync, exceeded bool
		want                     bool
	}{
		{name: "listed, out of sync, over", listed: true, exceeded: true, want: true},
		{name: "in sync", listed: true, inSync: true, exceeded: true},
		{name: "not listed", exceeded: true},
		{name: "under the rate", listed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.SetLimit(100)
			if !tc.exceeded {
				r.SetLimit(math.MaxInt64)
			}
			r.Record(1000)
			assert.Equal(t, tc.want, r.ShouldThrottle(tc.listed, tc.inSync))
		})
	}
	var none *Replication
	assert.False(t, none.ShouldThrottle(true, false), "no quota throttles nothing")
}
