package storage

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func TestRetentionBySizeOnAppend(t *testing.T) {
	size := int64(len(batchtest.Values(1, "x")))
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 2*size + size/2, MaxMessageBytes: 1 << 20})
	for range 3 {
		_, err := p.Append(batchtest.Values(1, "x"))
		require.NoError(t, err)
	}
	o, _ := p.Offsets()
	assert.Equal(t, int64(0), o.LogStart, "3 batches: without the first, the log would fall below retention.bytes")
	res, err := p.Append(batchtest.Values(1, "x"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.LogStartOffset, "4 batches: the first goes, as Kafka deletes a segment")
	o, _ = p.Offsets()
	assert.Equal(t, Offsets{LogStart: 1, HighWatermark: 4, LastStable: 4, LogEnd: 4}, o)
	_, err = p.Read(0, ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "deleted offsets are out of range")
}

func TestRetentionByTime(t *testing.T) {
	p, clk := newTestPartition(t, TopicConfig{Retention: time.Hour, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
	now := clk.Now().UnixMilli()
	for _, ts := range []int64{now - 30*60_000, now - 10*60_000, now + 24*3600_000, now} {
		_, err := p.Append(batchtest.Values(ts, "x"))
		require.NoError(t, err)
	}
	require.NoError(t, p.sweep(clk.Now()))
	o, _ := p.Offsets()
	assert.Equal(t, int64(0), o.LogStart, "nothing is an hour old yet")

	clk.Advance(40 * time.Minute)
	require.NoError(t, p.sweep(clk.Now()))
	o, _ = p.Offsets()
	assert.Equal(t, int64(1), o.LogStart, "the batch 70 minutes old is gone")

	clk.Advance(10 * time.Hour)
	_, err := p.Append(batchtest.Values(clk.Now().UnixMilli(), "x"))
	require.NoError(t, err)
	o, _ = p.Offsets()
	assert.Equal(t, int64(2), o.LogStart, "applied on append too; and deletion stops at the first batch kept (a future timestamp), as Kafka's")
}

func TestRetentionWithoutTimestampsUsesAppendTime(t *testing.T) {
	p, clk := newTestPartition(t, TopicConfig{Retention: time.Hour, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
	_, err := p.Append(batchtest.Values(-1, "x"))
	require.NoError(t, err)
	require.NoError(t, p.sweep(clk.Now()))
	o, _ := p.Offsets()
	assert.Equal(t, int64(0), o.LogStart)
	clk.Advance(61 * time.Minute)
	require.NoError(t, p.sweep(clk.Now()))
	o, _ = p.Offsets()
	assert.Equal(t, int64(1), o.LogStart)
}

func TestRetentionDeletesEverythingExpired(t *testing.T) {
	p, clk := newTestPartition(t, TopicConfig{Retention: time.Minute, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
	_, err := p.Append(batchtest.Values(clk.Now().UnixMilli(), "a", "b"))
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	require.NoError(t, p.sweep(clk.Now()))
	o, _ := p.Offsets()
	assert.Equal(t, Offsets{LogStart: 2, HighWatermark: 2, LastStable: 2, LogEnd: 2}, o)
	_, _, found, err := p.MaxTimestamp(ReadUncommitted)
	require.NoError(t, err)
	assert.False(t, found, "the max timestamp went with its batch")
	res, err := p.Append(batchtest.Values(clk.Now().UnixMilli(), "c"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.BaseOffset, "offsets go on from the log end")
}

func TestRetentionKeepsTheMaxTimestampCurrent(t *testing.T) {
	size := int64(len(batchtest.Values(1, "x")))
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 2 * size, MaxMessageBytes: 1 << 20})
	for _, ts := range []int64{500, 100, 300} {
		_, err := p.Append(batchtest.Values(ts, "x"))
		require.NoError(t, err)
	}
	o, _ := p.Offsets()
	require.Equal(t, int64(1), o.LogStart, "the batch with the largest timestamp went for size")
	off, ts, found, err := p.MaxTimestamp(ReadUncommitted)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, int64(2), off)
	assert.Equal(t, int64(300), ts)
}

// TestRetentionKeepsTheMaxTimestampWithTies: with batches that share the
// largest timestamp (equal timestamps, or none), a batch that goes for
// size hands the max timestamp to the first kept batch with the same one,
// found without a rescan; when none is kept, the rescan finds the next.
// After every append, MaxTimestamp is what a brute-force look at the kept
// batches says.
func TestRetentionKeepsTheMaxTimestampWithTies(t *testing.T) {
	size := int64(len(batchtest.Values(1, "x")))
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 3 * size, MaxMessageBytes: 1 << 20})
	stamps := []int64{500, 500, 100, 500, 200, 200, 300, 300, 300, 100, 100, 100}
	for i, ts := range stamps {
		_, err := p.Append(batchtest.Values(ts, "x"))
		require.NoError(t, err)
		o, _ := p.Offsets()
		wantOff, wantTS := int64(-1), int64(-1)
		for off := o.LogStart; off <= int64(i); off++ {
			if stamps[off] > wantTS {
				wantOff, wantTS = off, stamps[off]
			}
		}
		off, ts, found, err := p.MaxTimestamp(ReadUncommitted)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, [2]int64{wantOff, wantTS}, [2]int64{off, ts}, "after the append of offset %d, log start %d", i, o.LogStart)
	}
}

// TestSweeperGoroutine runs the store's own retention goroutine in a
// synctest bubble, where time moves only when every goroutine is blocked:
// the verdict does not depend on the machine's speed, and the bubble fails
// the test if the goroutine outlives Close.
func TestSweeperGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithRetentionCheckInterval(5*time.Minute),
			WithTopicDefaults(TopicConfig{Retention: time.Hour, RetentionBytes: -1, MaxMessageBytes: 1 << 20}))
		require.NoError(t, err)
		topic, err := s.CreateTopic("t", 1, s.TopicDefaults())
		require.NoError(t, err)
		p := topic.Partitions[0]
		_, err = p.Append(batchtest.Values(time.Now().UnixMilli(), "x"))
		require.NoError(t, err)

		time.Sleep(time.Hour + 4*time.Minute) // past the hour, before the sweep after it
		synctest.Wait()
		o, _ := p.Offsets()
		assert.Equal(t, int64(0), o.LogStart, "expired, but no sweep ran since")

		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		o, _ = p.Offsets()
		assert.Equal(t, int64(1), o.LogStart, "the sweep at 65 minutes deleted it")

		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "idempotent")
	})
}

// TestAdvanceLogStart: the log start moves to exactly the offset asked,
// inside a batch if it falls there (Kafka's log start is logical), never
// past the high watermark, never back.
func TestAdvanceLogStart(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for range 4 {
		_, err := p.Append(batchtest.Values(1, "x", "y")) // 2 records a batch: 0-1, 2-3, 4-5, 6-7
		require.NoError(t, err)
	}
	p.SetHighWatermarkManaged(true)
	p.SetHighWatermark(5)

	tests := []struct {
		name   string
		offset int64
		want   int64
	}{
		{"inside a batch: exactly there", 3, 3},
		{"before the start: nothing", 1, 3},
		{"past the high watermark: held at it", 7, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, err := p.AdvanceLogStart(tt.offset)
			require.NoError(t, err)
			assert.Equal(t, tt.want, start)
			o, _ := p.Offsets()
			assert.Equal(t, tt.want, o.LogStart, "Offsets agrees")
		})
	}
	_, err := p.Read(4, ReadReplica, 1<<20, true)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "offsets before the log start are out of range, in a batch kept or not")
}
