package replica

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/timer"
)

// TestFetcherFollowerThrottle: a partition whose
// follower.replication.throttled.replicas names it on this broker (2) is
// left out of the fetch while the follower quota is exceeded and the
// replica has not caught up with the leader's high watermark, and fetched
// again once the rate, on a manual clock, falls back under the limit; once
// caught up it is fetched whatever the rate (Kafka's
// shouldFollowerThrottle). Unlisted, it is never held back.
func TestFetcherFollowerThrottle(t *testing.T) {
	f := newFetcherFixture(t)
	clk := timer.NewManualClock(time.Hour)
	q, err := quota.NewReplication(quota.WithClock(clk))
	require.NoError(t, err)
	q.SetLimit(10) // bytes per second: one batch exceeds it
	f.fe.cfg.Quota = q
	f.fe.cfg.MaxBytes = 1 // one batch a fetch (the first is taken whatever its size)
	for _, v := range []string{"a", "b", "c"} {
		_, err := f.leader.Append(batchtest.Values(1, v))
		require.NoError(t, err)
	}
	require.True(t, f.leader.AdvanceHighWatermark(3))
	f.follower.SetLeaderEpoch(1)
	reconciled := map[*storage.Partition]int32{f.follower: 1}
	inSync := map[*storage.Partition]bool{}
	fetch := func() []*storage.Partition {
		t.Helper()
		parts := f.fe.unthrottled(f.fe.followedFrom(1), inSync)
		if len(parts) > 0 {
			_, err := f.fe.fetchOnce(context.Background(), 1, parts, reconciled, inSync)
			require.NoError(t, err)
		}
		return parts
	}
	logEnd := func() int64 {
		o, err := f.follower.Offsets()
		require.NoError(t, err)
		return o.LogEnd
	}

	assert.Len(t, fetch(), 1, "not listed: fetched")
	assert.Zero(t, q.Rate(), "an unlisted partition's bytes are not recorded")
	assert.Equal(t, int64(1), logEnd())

	cfg := f.follower.Topic().Config()
	cfg.FollowerThrottled = "0:2"
	_, err = f.store.AlterTopicConfig(f.follower.Topic().ID, cfg)
	require.NoError(t, err)
	assert.Len(t, fetch(), 1, "listed, under the rate: fetched")
	assert.Equal(t, int64(2), logEnd())
	assert.True(t, q.Exceeded(), "its bytes took the rate over the limit")
	assert.Empty(t, fetch(), "listed, behind the high watermark, over the rate: left out")
	assert.Equal(t, int64(2), logEnd())

	clk.Advance(time.Minute) // every window expired
	assert.Len(t, fetch(), 1, "back under the rate: fetched")
	assert.Equal(t, int64(3), logEnd(), "caught up")
	require.True(t, q.Exceeded())
	_, err = f.leader.Append(batchtest.Values(1, "d"))
	require.NoError(t, err)
	require.True(t, f.leader.AdvanceHighWatermark(4))
	assert.Len(t, fetch(), 1, "in sync at its last fetch: fetched over the rate")
	assert.Equal(t, int64(4), logEnd())
}
