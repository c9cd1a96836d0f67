package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func TestLeaderEpochsAssign(t *testing.T) {
	var c leaderEpochs
	assert.True(t, c.assign(0, 0), "the first epoch")
	assert.False(t, c.assign(0, 5), "the same epoch again: its start stays")
	assert.False(t, c.assign(-1, 6), "no epoch")
	assert.True(t, c.assign(2, 10))
	assert.False(t, c.assign(1, 12), "a smaller epoch is not new")
	assert.True(t, c.assign(3, 8), "a larger epoch starting before the latest's start replaces it")
	assert.Equal(t, leaderEpochs{{0, 0}, {3, 8}}, c)
}

func TestLeaderEpochsEndOffsetFor(t *testing.T) {
	c := leaderEpochs{{1, 0}, {3, 10}, {4, 25}}
	const logEnd = 40
	for _, tc := range []struct {
		name   string
		epoch  int32
		want   int32
		offset int64
	}{
		{"undefined", -1, UndefinedEpoch, UndefinedEpochOffset},
		{"below the first epoch: its start, the requested epoch kept", 0, 0, 0},
		{"the first epoch ends where the next starts", 1, 1, 10},
		{"an epoch between two: the one below", 2, 1, 10},
		{"a middle epoch", 3, 3, 25},
		{"the latest ends at the log end", 4, 4, logEnd},
		{"above the latest", 5, UndefinedEpoch, UndefinedEpochOffset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, off := c.endOffsetFor(tc.epoch, logEnd)
			assert.Equal(t, tc.want, e, "epoch")
			assert.Equal(t, tc.offset, off, "end offset")
		})
	}
	e, off := leaderEpochs(nil).endOffsetFor(0, logEnd)
	assert.Equal(t, UndefinedEpoch, e, "an empty cache knows no epoch")
	assert.Equal(t, UndefinedEpochOffset, off)
}

func TestLeaderEpochsTruncate(t *testing.T) {
	c := leaderEpochs{{1, 0}, {3, 10}, {4, 25}}
	assert.False(t, c.truncateFromEnd(30), "past every start")
	assert.True(t, c.truncateFromEnd(25), "an epoch starting at the new end goes")
	assert.Equal(t, leaderEpochs{{1, 0}, {3, 10}}, c)

	assert.False(t, c.truncateFromStart(0), "at the first start")
	assert.True(t, c.truncateFromStart(12), "the epoch holding the new start now starts there")
	assert.Equal(t, leaderEpochs{{3, 12}}, c)
	assert.False(t, c.truncateFromStart(12))
	assert.True(t, c.truncateFromStart(40), "past the log: the latest epoch is kept, at the start")
	assert.Equal(t, leaderEpochs{{3, 40}}, c)
}

// TestPartitionLeaderEpochs: a leader's appends record each new epoch at
// its first batch, a follower's appends the leader's epochs; truncation
// from the end drops the epochs cut, a full truncation empties the cache,
// and retention moves the first epoch's start.
func TestPartitionLeaderEpochs(t *testing.T) {
	leader, follower := leaderAndFollower(t, forever)
	appendAt := func(epoch int32, values ...string) {
		t.Helper()
		leader.SetLeaderEpoch(epoch)
		_, err := leader.Append(batchtest.Values(100, values...))
		require.NoError(t, err)
	}
	appendAt(0, "a", "b") // 0-1
	appendAt(0, "c")      // 2
	appendAt(2, "d", "e") // 3-4
	require.NoError(t, leader.AssignLeaderEpoch(5))
	assert.Equal(t, []EpochEntry{{0, 0}, {2, 3}, {5, 5}}, leader.LeaderEpochs(), "a leader records its epoch at its log end")
	appendAt(5, "f") // 5
	assert.Equal(t, []EpochEntry{{0, 0}, {2, 3}, {5, 5}}, leader.LeaderEpochs())

	e, end, err := leader.EndOffsetForEpoch(1)
	require.NoError(t, err)
	assert.Equal(t, []any{int32(0), int64(3)}, []any{e, end}, "epoch 1 is not the leader's: epoch 0 ends at 3")
	e, end, err = leader.EndOffsetForEpoch(5)
	require.NoError(t, err)
	assert.Equal(t, []any{int32(5), int64(6)}, []any{e, end}, "the latest epoch ends at the log end")

	_, err = follower.AppendReplica(replicaRead(t, leader, 0))
	require.NoError(t, err)
	assert.Equal(t, []EpochEntry{{0, 0}, {2, 3}, {5, 5}}, follower.LeaderEpochs(), "a follower keeps its leader's epochs")
	latest, ok := follower.LatestLeaderEpoch()
	assert.True(t, ok)
	assert.Equal(t, int32(5), latest)

	require.NoError(t, follower.AssignLeaderEpoch(7))
	require.NoError(t, follower.TruncateTo(offsetsOf(t, follower).LogEnd))
	assert.Equal(t, []EpochEntry{{0, 0}, {2, 3}, {5, 5}}, follower.LeaderEpochs(),
		"truncating at the log end drops an epoch recorded there without a batch")
	require.NoError(t, follower.TruncateTo(4), "inside the batch 3-4: cut at 3")
	assert.Equal(t, []EpochEntry{{0, 0}}, follower.LeaderEpochs(), "the epochs of the batches cut go")
	require.NoError(t, follower.TruncateFullyAndStartAt(10))
	assert.Empty(t, follower.LeaderEpochs(), "an empty log has no epochs")
	_, ok = follower.LatestLeaderEpoch()
	assert.False(t, ok)
}

func TestRetentionMovesTheFirstEpoch(t *testing.T) {
	size := int64(len(batchtest.Values(100, "a")))
	cfg := forever
	cfg.RetentionBytes = 3 * size // of five batches of one size, the two oldest go
	p, _ := newTestPartition(t, cfg)
	for i, v := range []string{"a", "b", "c", "d", "e"} {
		p.SetLeaderEpoch(1 + int32(i/3)) // a, b, c at epoch 1; d, e at 2
		_, err := p.Append(batchtest.Values(100, v))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), offsetsOf(t, p).LogStart, "retention kept the last three batches")
	assert.Equal(t, []EpochEntry{{1, 2}, {2, 3}}, p.LeaderEpochs(), "epoch 1 now starts at the log start")
}
