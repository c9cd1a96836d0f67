package group

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestHeldGroupOffsetsExpireOnlyOnceReleased is a KIP-848 consumer
// group's offsets, kept in an Empty group here: they do not expire while
// another protocol holds the group (its members), however old; once
// released, those past their retention expire at once, the others at
// their commit plus the retention, and the group goes with the last,
// telling WithOnExpired.
func TestHeldGroupOffsetsExpireOnlyOnceReleased(t *testing.T) {
	const retention = time.Hour
	var held atomic.Bool
	var mu sync.Mutex
	var expired []string
	c, clk := newTestCoordinator(t, WithOffsetsRetention(retention),
		WithHeld(func(g string) bool { return g == "g" && held.Load() }),
		WithOnExpired(func(g string) { mu.Lock(); expired = append(expired, g); mu.Unlock() }))
	held.Store(true)
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 1))
	clk.Advance(2 * retention)
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", "", -1, 1, 2)) // partition 1 committed now
	clk.Advance(retention / 2)
	// Partition 0's commit is two and a half retentions old.
	assert.Equal(t, []int64{1, 2}, fetch(t, c, "g", 2), "held: nothing expires")

	held.Store(false)
	assert.True(t, c.Release("g"), "the group keeps offsets")
	clk.Advance(0)
	assert.Equal(t, []int64{1, 2}, fetch(t, c, "g", 2), "both were committed half a retention ago")
	clk.Advance(retention/2 - time.Millisecond)
	assert.Equal(t, []int64{1, 2}, fetch(t, c, "g", 2))
	_, found, _ := c.DescribeGroup("g")
	assert.True(t, found)

	clk.Advance(time.Millisecond)
	assert.Equal(t, []int64{-1, -1}, fetch(t, c, "g", 2), "released: expired at their commit plus the retention")
	_, found, _ = c.DescribeGroup("g")
	assert.False(t, found, "and the group with them")
	mu.Lock()
	assert.Equal(t, []string{"g"}, expired, "WithOnExpired told once")
	mu.Unlock()
	assert.False(t, c.Release("g"), "no group left, no offsets")
}

// TestHeldAgainStopsTheExpiry has the group held again after its release,
// before its offsets are due: their expiry finds it held and leaves them.
func TestHeldAgainStopsTheExpiry(t *testing.T) {
	const retention = time.Hour
	var held atomic.Bool
	c, clk := newTestCoordinator(t, WithOffsetsRetention(retention), WithHeld(func(string) bool { return held.Load() }))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 1))
	assert.True(t, c.Release("g"))
	held.Store(true) // a member joined: the broker does not tell, the expiry asks
	clk.Advance(2 * retention)
	assert.Equal(t, []int64{1}, fetch(t, c, "g", 1), "held when due: kept")
	held.Store(false)
	assert.True(t, c.Release("g"))
	clk.Advance(0)
	assert.Equal(t, []int64{-1}, fetch(t, c, "g", 1), "released past its retention: expired at once")
}
