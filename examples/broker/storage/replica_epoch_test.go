package storage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestAppendReplicaAtRefusesAMovedEpoch plays the follower's race one
// step at a time: a fetch is made at the partition's leader epoch, the
// metadata moves the epoch while the fetch is in flight, and the answer
// comes back. AppendReplicaAt refuses it, appending nothing; an answer to
// a fetch made at the current epoch is appended.
func TestAppendReplicaAtRefusesAMovedEpoch(t *testing.T) {
	leader, _ := leaderAndFollower(t, forever)
	for _, v := range []string{"a", "b"} {
		_, err := leader.Append(batchtest.Values(1, v))
		require.NoError(t, err)
	}
	records := replicaRead(t, leader, 0)

	tests := []struct {
		name      string
		fetchedAt int32   // the epoch the fetch was made at
		moves     []int32 // the epochs the metadata sets while it is in flight
		want      error   // nil: appended
	}{
		{"the epoch held", 3, nil, nil},
		{"the epoch set again, unchanged", 3, []int32{3}, nil},
		{"the epoch moved", 3, []int32{4}, ErrLeaderEpochMoved},
		{"the epoch moved and came back", 3, []int32{4, 3}, nil},
		{"a fetch made at an older epoch", 2, nil, ErrLeaderEpochMoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			follower, _ := newTestPartition(t, forever)
			follower.SetLeaderEpoch(3)
			for _, e := range tt.moves {
				follower.SetLeaderEpoch(e)
			}
			res, err := follower.AppendReplicaAt(tt.fetchedAt, records)
			o := offsetsOf(t, follower)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
				assert.Equal(t, AppendResult{BaseOffset: 0, LastOffset: -1}, res, "nothing appended")
				assert.Zero(t, o.LogEnd, "the stale leader's batches are not in the log")
				assert.Empty(t, follower.LeaderEpochs(), "nor their epochs in the cache")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(2), o.LogEnd, "the leader's batches are appended")
			assert.True(t, bytes.Equal(records, replicaRead(t, follower, 0)), "byte for byte")
		})
	}
}

// TestAppendReplicaAtChecksUnderTheAppendLock checks that the epoch check
// and the append are one critical section: while the log appends (the
// hook runs inside Log.Append), the partition's lock is held, so that
// SetLeaderEpoch, which takes it, cannot land between them, and the epoch
// is still the one the fetch was made at.
func TestAppendReplicaAtChecksUnderTheAppendLock(t *testing.T) {
	var follower *Partition
	appends := 0
	opener := func(string, TopicID, int32) (Log, error) {
		return &hookedLog{Log: NewMemLog(), onAppend: func() {
			appends++
			if follower.mu.TryLock() {
				follower.mu.Unlock()
				t.Error("the partition's lock is not held through the append")
			}
			assert.Equal(t, int32(3), follower.LeaderEpoch(), "the epoch is the fetch's")
		}}, nil
	}
	follower, _ = newTestPartition(t, forever, WithLogOpener(opener))
	follower.SetLeaderEpoch(3)
	_, err := follower.AppendReplicaAt(3, batchtest.At(0, batchtest.Values(1, "a")))
	require.NoError(t, err)
	assert.Equal(t, 1, appends, "the batch reached the log")
}

// hookedLog is a Log that calls onAppend before each Append.
type hookedLog struct {
	Log
	onAppend func()
}

func (l *hookedLog) Append(b *Batch) error {
	l.onAppend()
	return l.Log.Append(b)
}
