package cache

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filled returns a partition started at 10 holding batches at 10 (3
// records), 13 (1) and, after a compaction gap, 20 (2), with the high
// watermark at 22.
func filled(t *testing.T, limit int) (*Partition, [][]byte) {
	t.Helper()
	bs := [][]byte{batchOf(10, 0, "a", "b", "c"), batchOf(13, 0, "d"), batchOf(20, 0, "e", "f")}
	p := NewPartition(10, limit)
	n, err := p.Append(join(bs...), State{HighWatermark: 22, LastStable: 22, LogStart: 0})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	return p, bs
}

func TestReadAnswersOffsetsItCovers(t *testing.T) {
	p, bs := filled(t, 1<<20)
	tests := []struct {
		name   string
		offset int64
		want   []byte
		ok     bool
	}{
		{name: "at the start", offset: 10, want: join(bs...), ok: true},
		{name: "inside a batch: the whole batch", offset: 12, want: join(bs...), ok: true},
		{name: "second batch", offset: 13, want: join(bs[1:]...), ok: true},
		{name: "in a gap: the next batch", offset: 15, want: bs[2], ok: true},
		{name: "at the end: nothing yet", offset: 22, ok: true},
		{name: "past the high watermark", offset: 23},
		{name: "before the start", offset: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := p.Read(tt.offset, ReadUncommitted, 1<<20, true)
			require.Equal(t, tt.ok, ok, "answered from the cache")
			assert.Equal(t, tt.want, res.Records, "records")
			if ok {
				assert.Equal(t, State{HighWatermark: 22, LastStable: 22, LogStart: 0}, res.State, "upstream's state")
			}
			n, ok := p.Readable(tt.offset, ReadUncommitted, 1<<20)
			assert.Equal(t, tt.ok, ok, "Readable agrees")
			assert.Equal(t, len(tt.want), n, "readable bytes")
		})
	}
}

func TestReadHonoursMaxBytes(t *testing.T) {
	p, bs := filled(t, 1<<20)
	tests := []struct {
		name   string
		max    int
		minOne bool
		want   []byte
	}{
		{name: "whole batches that fit", max: len(bs[0]) + len(bs[1]) + 1, want: join(bs[:2]...)},
		{name: "first batch too large: nothing", max: len(bs[0]) - 1},
		{name: "first batch too large with minOne: it alone", max: 1, minOne: true, want: bs[0]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := p.Read(10, ReadUncommitted, tt.max, tt.minOne)
			require.True(t, ok)
			assert.Equal(t, tt.want, res.Records)
		})
	}
	n, ok := p.Readable(10, ReadUncommitted, 5)
	require.True(t, ok)
	assert.Equal(t, 5, n, "readable bytes are counted up to the partition's max, as Kafka's DelayedFetch does")
}

func TestReadBelowLogStartIsAMiss(t *testing.T) {
	p, _ := filled(t, 1<<20)
	_, err := p.Append(nil, State{HighWatermark: 22, LastStable: 22, LogStart: 13})
	require.NoError(t, err)
	_, ok := p.Read(12, ReadUncommitted, 1<<20, true)
	assert.False(t, ok, "upstream answers OFFSET_OUT_OF_RANGE there, not the cache")
	_, ok = p.Read(13, ReadUncommitted, 1<<20, true)
	assert.True(t, ok, "from the log start on, the cache answers")
}

func TestAnOffsetTheTailerHasNotReachedWaits(t *testing.T) {
	p := NewPartition(10, 1<<20)
	_, err := p.Append(batchOf(10, 0, "a"), State{HighWatermark: 30, LastStable: 30, LogStart: 0})
	require.NoError(t, err)
	res, ok := p.Read(25, ReadUncommitted, 1<<20, true)
	assert.True(t, ok, "below the high watermark: the tailer will bring it")
	assert.Nil(t, res.Records, "nothing yet")
}

func TestEvictionKeepsTheNewestBatch(t *testing.T) {
	a, b, c := batchOf(0, 0, "a"), batchOf(1, 0, "b"), batchOf(2, 0, "c")
	p := NewPartition(0, len(a)+len(b))
	for _, x := range [][]byte{a, b, c} {
		_, err := p.Append(x, State{HighWatermark: 3, LastStable: 3})
		require.NoError(t, err)
	}
	from, end, size := p.Span()
	assert.Equal(t, int64(1), from, "the oldest batch went")
	assert.Equal(t, int64(3), end)
	assert.Equal(t, len(b)+len(c), size)
	_, ok := p.Read(0, ReadUncommitted, 1<<20, true)
	assert.False(t, ok, "an evicted offset is read from upstream")

	big := batchOf(3, 0, string(make([]byte, 4*len(a))))
	_, err := p.Append(big, State{HighWatermark: 4, LastStable: 4})
	require.NoError(t, err)
	from, _, size = p.Span()
	assert.Equal(t, int64(3), from, "a batch larger than the limit stays alone")
	assert.Equal(t, len(big), size)
}

func TestReadCommittedOnlyWhereExact(t *testing.T) {
	plain, txn, after := batchOf(0, 0, "a"), batchOf(1, attrTxn, "t"), batchOf(2, 0, "b")
	p := NewPartition(0, 1<<20)
	_, err := p.Append(join(plain, txn, after), State{HighWatermark: 3, LastStable: 3})
	require.NoError(t, err)

	res, ok := p.Read(0, ReadCommitted, 1<<20, true)
	require.True(t, ok)
	assert.Equal(t, plain, res.Records, "stops before the transactional batch")
	_, ok = p.Read(1, ReadCommitted, 1<<20, true)
	assert.False(t, ok, "a transactional batch first: upstream answers, with its aborted transactions")
	_, ok = p.Readable(1, ReadCommitted, 1<<20)
	assert.False(t, ok, "Readable agrees")
	res, ok = p.Read(2, ReadCommitted, 1<<20, true)
	require.True(t, ok)
	assert.Equal(t, after, res.Records, "past it, exact again")

	// An open transaction holds the last stable offset back: what lies
	// beyond it is not yet readable, and a read waits.
	_, err = p.Append(batchOf(3, 0, "c"), State{HighWatermark: 4, LastStable: 3})
	require.NoError(t, err)
	res, ok = p.Read(3, ReadCommitted, 1<<20, true)
	require.True(t, ok)
	assert.Nil(t, res.Records, "above the last stable offset: nothing yet")
	res, ok = p.Read(3, ReadUncommitted, 1<<20, true)
	require.True(t, ok)
	assert.NotNil(t, res.Records, "read_uncommitted sees it")
}

func TestAppendSkipsWhatItHolds(t *testing.T) {
	a, b := batchOf(0, 0, "a"), batchOf(1, 0, "b")
	p := NewPartition(0, 1<<20)
	_, err := p.Append(a, State{HighWatermark: 1})
	require.NoError(t, err)
	n, err := p.Append(join(a, b), State{HighWatermark: 2})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the batch held already is skipped")
	n, err = p.Append(join(b, batchOf(2, 0, "c")[:15]), State{HighWatermark: 3})
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a partial batch waits for the next fetch")
	assert.Equal(t, int64(2), p.End())
	assert.Equal(t, int64(3), p.State().HighWatermark, "the state moves even without batches")

	old := batchOf(2, 0, "c")
	old[magicPos] = 0
	_, err = p.Append(old, State{HighWatermark: 9})
	assert.ErrorIs(t, err, ErrMessageFormat)
	assert.Equal(t, int64(3), p.State().HighWatermark, "a failed append changes nothing")
}

func TestReadSharesTheBytesOfOneAppend(t *testing.T) {
	p, bs := filled(t, 1<<20)
	res, _ := p.Read(10, ReadUncommitted, 1<<20, true)
	again, _ := p.Read(10, ReadUncommitted, 1<<20, true)
	require.Equal(t, join(bs...), res.Records)
	assert.Same(t, &res.Records[0], &again.Records[0], "batches of one Append are returned without a copy")

	_, err := p.Append(batchOf(22, 0, "g"), State{HighWatermark: 23})
	require.NoError(t, err)
	res, _ = p.Read(20, ReadUncommitted, 1<<20, true)
	assert.Equal(t, join(bs[2], batchOf(22, 0, "g")), res.Records, "batches of two Appends are copied together")
}

// TestConcurrentAppendAndRead runs one appender and readers together; under
// -race it checks the locking, and each read must see whole batches in
// order.
func TestConcurrentAppendAndRead(t *testing.T) {
	p := NewPartition(0, 4<<10)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				from, _, _ := p.Span()
				res, ok := p.Read(from, ReadUncommitted, 1<<20, true)
				if !ok {
					continue // evicted meanwhile
				}
				next := int64(-1)
				for _, h := range headers(res.Records) {
					if next >= 0 && h.Base != next {
						t.Errorf("batch at %d after one ending at %d", h.Base, next-1)
						return
					}
					next = h.Last + 1
				}
			}
		}()
	}
	for i := int64(0); i < 2000; i++ {
		_, err := p.Append(batchOf(i, 0, fmt.Sprint(i)), State{HighWatermark: i + 1, LastStable: i + 1})
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	_, end, size := p.Span()
	assert.Equal(t, int64(2000), end)
	assert.LessOrEqual(t, size, 4<<10, "bounded")
}
