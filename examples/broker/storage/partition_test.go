package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func TestAppendAssignsOffsets(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for i, want := range []int64{0, 2, 5} {
		n := []int{2, 3, 1}[i]
		vals := make([]string, n)
		for j := range vals {
			vals[j] = "v"
		}
		res, err := p.Append(batchtest.Values(int64(i), vals...))
		require.NoError(t, err)
		assert.Equal(t, want, res.BaseOffset)
		assert.Equal(t, want+int64(n)-1, res.LastOffset)
		assert.False(t, res.Duplicate)
	}
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 6, LastStable: 6, LogEnd: 6}, o,
		"one broker: the high watermark follows the log end")

	r, err := p.Read(0, ReadUncommitted, 1<<20, false)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	require.Len(t, recs, 6)
	for i, rec := range recs {
		assert.Equal(t, int64(i), rec.Offset, "offsets are written into the batches")
		assert.Equal(t, int32(0), rec.LeaderEpoch)
	}
}

func TestAppendRejects(t *testing.T) {
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 100})
	raw := batchtest.Values(1, "small")
	corrupt := append([]byte(nil), raw...)
	corrupt[len(corrupt)-1] ^= 0xff
	_, err := p.Append(corrupt)
	assert.ErrorIs(t, err, ErrCorruptBatch)
	_, err = p.Append(batchtest.Values(1, string(make([]byte, 100))))
	assert.ErrorIs(t, err, ErrBatchTooLarge)
	res, err := p.Append(raw)
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.BaseOffset, "rejected batches took no offsets")
}

func TestReadBounds(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	_, err := p.Append(batchtest.Values(1, "a", "b"))
	require.NoError(t, err)
	_, err = p.Read(3, ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "past the log end")
	_, err = p.Read(-1, ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "before the log start")
	r, err := p.Read(2, ReadCommitted, 1<<20, true)
	require.NoError(t, err, "the log end reads nothing")
	assert.Empty(t, r.Records)
	assert.Equal(t, int64(2), r.HighWatermark)

	n, err := p.Readable(0, ReadUncommitted, 1<<20)
	require.NoError(t, err)
	size := len(batchtest.Values(1, "a", "b"))
	assert.Equal(t, size, n)
	n, err = p.Readable(2, ReadUncommitted, 1<<20)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = p.Readable(5, ReadUncommitted, 1<<20)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
}

// TestReadBatchesReadCommitted: a ReadCommitted share fetch's read stops
// at the last stable offset and returns the aborted transactions its
// batches overlap, as Read does, so that the records of those batches
// are never handed out.
func TestReadBatchesReadCommitted(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	appendAll(t, p, batchtest.Values(1, "a"), batchtest.Transactional(7, 0, 0, 1, "b", "c"))
	_, err := p.AppendMarker(Marker{ProducerID: 7, ProducerEpoch: 0, Commit: false}) // offset 3
	require.NoError(t, err)
	appendAll(t, p, batchtest.Transactional(8, 0, 0, 1, "d"), batchtest.Values(1, "e")) // 8's is open
	r, err := p.ReadBatches(0, 5, ReadCommitted)
	require.NoError(t, err)
	assert.Equal(t, int64(3), lastOffsetIn(r.Records), "up to the last stable offset, 4")
	assert.Equal(t, []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}}, r.Aborted)
	r, err = p.ReadBatches(0, 5, ReadUncommitted)
	require.NoError(t, err)
	assert.Equal(t, int64(5), lastOffsetIn(r.Records))
	assert.Nil(t, r.Aborted, "read uncommitted: none")
}

// TestReadBatchesStopsAtTheLastOffsetsBatch: a share fetch's read returns
// the batches from the one holding its first offset through the one
// holding its last, none after, below the high watermark; BatchEnd names
// the batch that holds an offset, none past the log end.
func TestReadBatchesStopsAtTheLastOffsetsBatch(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for range 4 { // batches at offsets 0-2, 3-5, 6-8, 9-11
		_, err := p.Append(batchtest.Values(1, "a", "b", "c"))
		require.NoError(t, err)
	}
	size := len(batchtest.Values(1, "a", "b", "c"))
	r, err := p.ReadBatches(4, 7, ReadUncommitted)
	require.NoError(t, err)
	assert.Len(t, r.Records, 2*size, "the batches holding 4 and 7, not the last one")
	assert.Equal(t, int64(8), lastOffsetIn(r.Records))
	r, err = p.ReadBatches(9, 100, ReadUncommitted)
	require.NoError(t, err)
	assert.Len(t, r.Records, size, "bounded by the high watermark")
	_, err = p.ReadBatches(13, 14, ReadUncommitted)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)

	for off, want := range map[int64]int64{0: 2, 2: 2, 3: 5, 10: 11} {
		end, ok := p.BatchEnd(off)
		assert.True(t, ok, "offset %d", off)
		assert.Equal(t, want, end, "offset %d", off)
	}
	_, ok := p.BatchEnd(12)
	assert.False(t, ok, "the log end holds no batch")
}

func TestReadableStopsCountingAtItsBound(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for range 10 {
		_, err := p.Append(batchtest.Values(1, "x"))
		require.NoError(t, err)
	}
	size := len(batchtest.Values(1, "x"))
	n, err := p.Readable(0, ReadUncommitted, 2*size+1)
	require.NoError(t, err)
	assert.Equal(t, 3*size, n, "whole batches, until the bound is reached")
}

func TestTimestamps(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for _, ts := range []int64{100, 300, 200} { // batches at offsets 0-1, 2-3, 4-5
		_, err := p.Append(batchtest.Values(ts, "a", "b"))
		require.NoError(t, err)
	}
	tests := []struct {
		ts         int64
		wantOffset int64
		wantFound  bool
	}{
		{0, 0, true}, {100, 0, true}, {101, 2, true}, {250, 2, true}, {300, 2, true}, {301, 0, false},
	}
	for _, tt := range tests {
		off, ts, found, err := p.Timestamp(tt.ts, ReadUncommitted)
		require.NoError(t, err)
		assert.Equal(t, tt.wantFound, found, "ts %d", tt.ts)
		if found {
			assert.Equal(t, tt.wantOffset, off, "ts %d", tt.ts)
			assert.GreaterOrEqual(t, ts, tt.ts)
		}
	}
	off, ts, found, err := p.MaxTimestamp(ReadUncommitted)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, int64(3), off, "the last offset of the batch with the largest timestamp")
	assert.Equal(t, int64(300), ts)
}

func TestDeletedPartition(t *testing.T) {
	s, _ := newTestStore(t)
	topic, err := s.CreateTopic("gone", 2, s.TopicDefaults())
	require.NoError(t, err)
	p := topic.Partitions[1]
	_, err = p.Append(batchtest.Values(1, "a"))
	require.NoError(t, err)
	_, err = s.DeleteTopic("gone")
	require.NoError(t, err)
	assert.True(t, p.Deleted())
	assert.True(t, topic.Deleted())
	_, err = p.Append(batchtest.Values(1, "a"))
	assert.ErrorIs(t, err, ErrDeleted)
	_, err = p.Read(0, ReadUncommitted, 100, true)
	assert.ErrorIs(t, err, ErrDeleted)
	_, err = p.Readable(0, ReadUncommitted, 100)
	assert.ErrorIs(t, err, ErrDeleted)
	_, err = p.Offsets()
	assert.ErrorIs(t, err, ErrDeleted)
	_, _, _, err = p.Timestamp(0, ReadUncommitted)
	assert.ErrorIs(t, err, ErrDeleted)
	_, _, _, err = p.MaxTimestamp(ReadUncommitted)
	assert.ErrorIs(t, err, ErrDeleted)
}
