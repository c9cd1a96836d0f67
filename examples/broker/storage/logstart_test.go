package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// fourBatches returns a partition holding batches 0-1, 2-3, 4-5 and 6-7,
// appended at leader epochs 0, 0, 1 and 2, its high watermark at hw.
func fourBatches(t *testing.T, hw int64) *Partition {
	t.Helper()
	p, _ := newTestPartition(t, forever)
	for _, epoch := range []int32{0, 0, 1, 2} {
		p.SetLeaderEpoch(epoch)
		_, err := p.Append(batchtest.Values(100+int64(epoch), "x", "y"))
		require.NoError(t, err)
	}
	p.SetHighWatermarkManaged(true)
	p.SetHighWatermark(hw)
	return p
}

// TestDeleteRecords: the log start becomes exactly the offset asked, up to
// the high watermark, and the partition answers from it: reads before it
// are out of range, a read inside the batch it falls in returns the batch
// whole (as Kafka serves it), the leader-epoch cache and the offsets
// starting from it.
func TestDeleteRecords(t *testing.T) {
	tests := []struct {
		name    string
		offset  int64
		want    int64 // the log start after
		wantErr error
	}{
		{"inside a batch", 3, 3, nil},
		{"at a batch's base", 4, 4, nil},
		{"at the high watermark", 7, 7, nil},
		{"at the log start: nothing", 0, 0, nil},
		{"past the high watermark", 8, 0, ErrOffsetOutOfRange},
		{"negative", -2, 0, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fourBatches(t, 7)
			start, err := p.DeleteRecords(tt.offset)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, start, "the log start returned")
			assert.Equal(t, Offsets{LogStart: tt.want, HighWatermark: 7, LastStable: 7, LogEnd: 8}, offsetsOf(t, p))
		})
	}
}

func TestDeleteRecordsInsideABatch(t *testing.T) {
	p := fourBatches(t, 8)
	start, err := p.DeleteRecords(5)
	require.NoError(t, err)
	require.Equal(t, int64(5), start)

	_, err = p.Read(3, ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "a batch wholly before the log start")
	_, err = p.Read(4, ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "the batch kept, at an offset before the log start")
	_, err = p.Readable(4, ReadUncommitted, 1<<20)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)

	r, err := p.Read(5, ReadUncommitted, 1<<20, true)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	require.Len(t, recs, 4, "the straddling batch whole, and the next")
	assert.Equal(t, int64(4), recs[0].Offset, "from its base, as Kafka serves it")
	assert.Equal(t, int64(5), r.LogStart, "the read carries the log start")

	assert.Equal(t, []EpochEntry{{Epoch: 1, StartOffset: 5}, {Epoch: 2, StartOffset: 6}}, p.LeaderEpochs(),
		"the cache starts at the log start")
	offset, _, found, err := p.Timestamp(0, ReadUncommitted)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, int64(5), offset, "by timestamp: never before the log start")

	res, err := p.Append(batchtest.Values(200, "z"))
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.LogStartOffset, "an append answers the log start")

	start, err = p.DeleteRecords(4)
	require.NoError(t, err)
	assert.Equal(t, int64(5), start, "never back")
}

// TestDeleteRecordsDropsWholeBatches: the memory log's batches (its
// segments) wholly before the log start go; the one it falls inside stays.
func TestDeleteRecordsDropsWholeBatches(t *testing.T) {
	p := fourBatches(t, 8)
	size := p.log.Bounds().Size / 4
	_, err := p.DeleteRecords(5)
	require.NoError(t, err)
	b := p.log.Bounds()
	assert.Equal(t, int64(4), b.Start, "the batch holding the log start is kept")
	assert.Equal(t, 2*size, b.Size, "the two before it are gone")

	_, err = p.DeleteRecords(8)
	require.NoError(t, err)
	assert.Equal(t, Bounds{Start: 8, End: 8}, p.log.Bounds(), "every batch, at the log end")
	assert.Equal(t, int64(8), offsetsOf(t, p).LogStart)
}

// TestLogStartFollowsTruncation: a follower whose log is cut back below a
// log start inside its first batch starts at the cut (Kafka's truncateTo
// keeps min(target, logStartOffset)), and one reset starts where it is
// reset.
func TestLogStartFollowsTruncation(t *testing.T) {
	p := fourBatches(t, 8)
	_, err := p.AdvanceLogStart(5)
	require.NoError(t, err)
	require.NoError(t, p.TruncateTo(4))
	assert.Equal(t, Offsets{LogStart: 4, HighWatermark: 4, LastStable: 4, LogEnd: 4}, offsetsOf(t, p))

	q := fourBatches(t, 8)
	_, err = q.AdvanceLogStart(7)
	require.NoError(t, err)
	require.NoError(t, q.TruncateFullyAndStartAt(2))
	assert.Equal(t, Offsets{LogStart: 2, HighWatermark: 2, LastStable: 2, LogEnd: 2}, offsetsOf(t, q))
}

// TestFollowerStartsInsideABatch: a follower that emptied its log and
// started it at its leader's log start, inside a batch, takes that batch
// whole from its fetch at the log start, as Kafka's follower does, and
// its log start stays where the leader's is.
func TestFollowerStartsInsideABatch(t *testing.T) {
	leader := fourBatches(t, 8)
	_, err := leader.DeleteRecords(5)
	require.NoError(t, err)
	follower, _ := newTestPartition(t, forever)
	require.NoError(t, follower.TruncateFullyAndStartAt(5))

	res, err := follower.AppendReplica(replicaRead(t, leader, 5))
	require.NoError(t, err, "the batch 4-5 holds the follower's log start")
	assert.Equal(t, int64(4), res.BaseOffset)
	assert.Equal(t, int64(5), res.LogStartOffset)
	follower.SetHighWatermark(8)
	assert.Equal(t, Offsets{LogStart: 5, HighWatermark: 8, LastStable: 8, LogEnd: 8}, offsetsOf(t, follower))
	assert.Equal(t, replicaRead(t, leader, 5), replicaRead(t, follower, 5), "the leader's batches, byte for byte")
	assert.Equal(t, leader.LeaderEpochs(), follower.LeaderEpochs())

	_, err = follower.AppendReplica(replicaRead(t, leader, 5))
	assert.ErrorIs(t, err, ErrOffsetMismatch, "only an empty log restarts")
}
