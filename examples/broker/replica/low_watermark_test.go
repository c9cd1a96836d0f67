package replica

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestLowWatermark: the low watermark is the smallest log start among the
// leader and its followers on live brokers, as their fetches carried them
// (Kafka's lowWatermarkIfLeader): a follower that has not fetched at this
// leader epoch holds it at -1, and a fenced broker's replica counts no
// more.
func TestLowWatermark(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 5)
	f.leaders.FollowerFetched(f.p, 2, 5)
	f.leaders.FollowerFetched(f.p, 3, 5)
	require.Equal(t, int64(5), f.hw(t))
	_, err := f.p.DeleteRecords(3)
	require.NoError(t, err)

	low := func() int64 {
		t.Helper()
		lw, err := f.leaders.LowWatermark(f.p)
		require.NoError(t, err)
		return lw
	}
	assert.Equal(t, int64(-1), low(), "no follower told its log start yet")
	assert.True(t, f.leaders.FollowerLogStart(f.p, 2, 0), "follower 2's log start rose from unknown")
	assert.Equal(t, int64(-1), low(), "follower 3's is still unknown")
	assert.True(t, f.leaders.FollowerLogStart(f.p, 3, 3))
	assert.Equal(t, int64(0), low(), "follower 2 still has the records")
	assert.True(t, f.leaders.FollowerLogStart(f.p, 2, 3))
	assert.Equal(t, int64(3), low(), "every replica dropped them")
	assert.False(t, f.leaders.FollowerLogStart(f.p, 2, 3), "the same again: nothing rose")
	assert.False(t, f.leaders.FollowerLogStart(f.p, 4, 9), "a broker without a replica is ignored")

	_, err = f.p.DeleteRecords(5)
	require.NoError(t, err)
	assert.Equal(t, int64(3), low(), "the leader's own moved; the followers' not yet")
	rec := metadata.Fence(f.im, 3, false)
	f.im = f.im.Apply(f.im.Index+1, &rec)
	assert.True(t, f.leaders.FollowerLogStart(f.p, 2, 5))
	assert.Equal(t, int64(5), low(), "the fenced broker's replica does not hold it back")
}
