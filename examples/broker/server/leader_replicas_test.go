package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// leaderFixture is broker 1 of brokers 1, 2, 3 leading partition 0 of a
// topic of replication factor 3, on a clock the test moves.
type leaderFixture struct {
	now     time.Time
	leaders *leaderReplicas
	p       *storage.Partition
}

func newLeaderFixture(t *testing.T, minISR int32) *leaderFixture {
	t.Helper()
	cl, err := parseCluster("1@h:1,2@h:2,3@h:3", 1)
	require.NoError(t, err)
	store, err := storage.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tc := store.TopicDefaults()
	tc.MinInsyncReplicas = minISR
	topic, err := store.CreateTopicSpec(storage.TopicSpec{Name: "t", Partitions: 1, Config: tc, ReplicationFactor: 3})
	require.NoError(t, err)
	f := &leaderFixture{now: time.Unix(1000, 0), p: topic.Partitions[0]}
	cfg := Default()
	cfg.ReplicaLagTimeMax = 10 * time.Second
	f.leaders = newLeaderReplicas(cl, cfg, func() time.Time { return f.now })
	return f
}

// appendRecords appends n one-record batches at the leader.
func (f *leaderFixture) appendRecords(t *testing.T, n int) {
	t.Helper()
	for range n {
		_, err := f.p.Append(batchtest.Values(time.Now().UnixMilli(), "v"))
		require.NoError(t, err)
		f.leaders.afterAppend(f.p)
	}
}

func (f *leaderFixture) hw(t *testing.T) int64 {
	t.Helper()
	o, err := f.p.Offsets()
	require.NoError(t, err)
	return o.HighWatermark
}

// TestHighWatermarkIsTheISRMinimum: the high watermark moves only when
// every in-sync replica has fetched past the records, Kafka's rule.
func TestHighWatermarkIsTheISRMinimum(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 3)
	assert.Equal(t, int64(0), f.hw(t), "no follower has anything yet")
	assert.False(t, f.leaders.followerFetched(f.p, 2, 3))
	assert.Equal(t, int64(0), f.hw(t), "follower 3 has nothing yet")
	assert.True(t, f.leaders.followerFetched(f.p, 3, 2))
	assert.Equal(t, int64(2), f.hw(t))
	assert.True(t, f.leaders.followerFetched(f.p, 3, 3))
	assert.Equal(t, int64(3), f.hw(t))
	assert.False(t, f.leaders.followerFetched(f.p, 4, 3), "a broker without a replica is ignored")
	assert.Equal(t, []int32{1, 2, 3}, f.leaders.isr(f.p))
}

// TestLaggingFollowerLeavesAndRejoins: a follower not caught up for
// replica.lag.time.max.ms leaves the ISR at the next check, which lets the
// high watermark move on; it rejoins once it has reached the high
// watermark again.
func TestLaggingFollowerLeavesAndRejoins(t *testing.T) {
	f := newLeaderFixture(t, 2)
	f.appendRecords(t, 2)
	f.leaders.followerFetched(f.p, 2, 2)
	assert.Equal(t, int64(0), f.hw(t), "follower 3 holds it back")
	ok, n := f.leaders.enoughReplicas(f.p)
	assert.True(t, ok)
	assert.Equal(t, 3, n)

	f.now = f.now.Add(5 * time.Second)
	f.leaders.followerFetched(f.p, 2, 2) // caught up: it has the log end
	assert.Empty(t, f.leaders.shrink(), "within the lag time nothing changes")

	f.now = f.now.Add(6 * time.Second) // follower 3: 11s without catching up
	moved := f.leaders.shrink()
	require.Len(t, moved, 1)
	assert.Equal(t, []int32{1, 2}, f.leaders.isr(f.p))
	assert.Equal(t, int64(2), f.hw(t), "the ISR left has it all")
	ok, n = f.leaders.enoughReplicas(f.p)
	assert.True(t, ok, "min.insync.replicas 2")
	assert.Equal(t, 2, n)

	f.now = f.now.Add(11 * time.Second) // follower 2 lags too
	f.leaders.shrink()
	assert.Equal(t, []int32{1}, f.leaders.isr(f.p))
	ok, _ = f.leaders.enoughReplicas(f.p)
	assert.False(t, ok)
	f.appendRecords(t, 1)
	assert.Equal(t, int64(3), f.hw(t), "the leader alone moves it on append")

	f.leaders.followerFetched(f.p, 3, 1)
	assert.Equal(t, []int32{1}, f.leaders.isr(f.p), "below the high watermark: not back yet")
	f.leaders.followerFetched(f.p, 3, 3)
	assert.Equal(t, []int32{1, 3}, f.leaders.isr(f.p), "caught up: back in, in replica order")
}

// TestFollowerAheadOfLeaderDoesNotCount: a follower fetching past the
// leader's log end (it holds offsets a restarted leader lost) is told
// OFFSET_OUT_OF_RANGE and must truncate first: its fetch moves neither its
// recorded log end nor the high watermark, so nothing is acknowledged on
// the strength of records it does not have.
func TestFollowerAheadOfLeaderDoesNotCount(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 1)
	assert.False(t, f.leaders.followerFetched(f.p, 2, 5), "past the log end")
	assert.False(t, f.leaders.followerFetched(f.p, 3, 1))
	assert.Equal(t, int64(0), f.hw(t), "follower 2 has not shown it holds offset 0")
	assert.True(t, f.leaders.followerFetched(f.p, 2, 1))
	assert.Equal(t, int64(1), f.hw(t))
}
