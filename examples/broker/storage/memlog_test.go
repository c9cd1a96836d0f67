package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
)

// filledLog returns a memory log with batches of the given record counts,
// and each batch's size.
func filledLog(t *testing.T, counts ...int) (Log, []int) {
	t.Helper()
	l := NewMemLog()
	var sizes []int
	for _, n := range counts {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "v"
		}
		b, err := ParseBatch(batchtest.Values(1, vals...))
		require.NoError(t, err)
		require.NoError(t, l.Append(b.place(l.Bounds().End, 0, clocktest.New().Now())))
		sizes = append(sizes, b.info.Size)
	}
	return l, sizes
}

func TestMemLogRead(t *testing.T) {
	l, sizes := filledLog(t, 2, 3, 1) // offsets 0-1, 2-4, 5
	assert.Equal(t, Bounds{Start: 0, End: 6, Size: int64(sizes[0] + sizes[1] + sizes[2])}, l.Bounds())
	tests := []struct {
		name          string
		offset, limit int64
		maxBytes      int
		minOne        bool
		want          []int64 // offsets of the records read
	}{
		{"everything", 0, 6, 1 << 20, false, []int64{0, 1, 2, 3, 4, 5}},
		{"from inside a batch: the whole batch", 3, 6, 1 << 20, false, []int64{2, 3, 4, 5}},
		{"up to a limit", 0, 5, 1 << 20, false, []int64{0, 1, 2, 3, 4}},
		{"a limit inside a batch stops before it", 0, 4, 1 << 20, false, []int64{0, 1}},
		{"at the end", 6, 6, 1 << 20, false, nil},
		{"max bytes: whole batches only", 0, 6, sizes[0] + sizes[1] - 1, false, []int64{0, 1}},
		{"max bytes too small", 0, 6, 10, false, nil},
		{"max bytes too small, min one", 0, 6, 10, true, []int64{0, 1}},
		{"min one, then max bytes", 2, 6, sizes[1], true, []int64{2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := l.Read(nil, tt.offset, tt.limit, tt.maxBytes, tt.minOne)
			require.NoError(t, err)
			recs, err := batchtest.Decode(raw)
			require.NoError(t, err)
			var got []int64
			for _, r := range recs {
				got = append(got, r.Offset)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMemLogDropBefore(t *testing.T) {
	l, sizes := filledLog(t, 2, 3, 1)
	require.NoError(t, l.DropBefore(2))
	assert.Equal(t, Bounds{Start: 2, End: 6, Size: int64(sizes[1] + sizes[2])}, l.Bounds())
	require.NoError(t, l.DropBefore(4), "inside the batch at 2")
	assert.Equal(t, Bounds{Start: 2, End: 6, Size: int64(sizes[1] + sizes[2])}, l.Bounds(),
		"a batch is a segment: one holding the offset is kept whole, and the start stays at its base")
	assert.Error(t, l.DropBefore(7), "past the end")
	require.NoError(t, l.DropBefore(1), "already dropped: nothing to do")
	var bases []int64
	require.NoError(t, l.Scan(0, func(b BatchInfo) bool { bases = append(bases, b.BaseOffset); return true }))
	assert.Equal(t, []int64{2, 5}, bases)
	require.NoError(t, l.DropBefore(6))
	assert.Equal(t, Bounds{Start: 6, End: 6}, l.Bounds(), "an empty log starts at its end")
	b, err := ParseBatch(batchtest.Values(1, "x"))
	require.NoError(t, err)
	assert.Error(t, l.Append(b.place(3, 0, clocktest.New().Now())), "a batch must go at the end")
	require.NoError(t, l.Close())
}

func TestMemLogSegmentsAreBatches(t *testing.T) {
	l, sizes := filledLog(t, 2, 3)
	var segs []Segment
	require.NoError(t, l.Segments(func(s Segment) bool { segs = append(segs, s); return true }))
	assert.Equal(t, []Segment{
		{BaseOffset: 0, NextOffset: 2, Size: int64(sizes[0]), MaxTime: 1},
		{BaseOffset: 2, NextOffset: 5, Size: int64(sizes[1]), MaxTime: 1},
	}, segs)
	segs = nil
	require.NoError(t, l.Segments(func(s Segment) bool { segs = append(segs, s); return false }))
	assert.Len(t, segs, 1, "stops when told")
	require.NoError(t, l.Remove())
}

// bases returns the base offsets of l's batches.
func bases(t *testing.T, l Log) []int64 {
	t.Helper()
	var out []int64
	require.NoError(t, l.Scan(l.Bounds().Start, func(b BatchInfo) bool { out = append(out, b.BaseOffset); return true }))
	return out
}

func TestMemLogTruncateTo(t *testing.T) {
	tests := []struct {
		name      string
		offset    int64
		want      error // nil: truncated
		wantBases []int64
	}{
		{"at the end: nothing to do", 6, nil, []int64{0, 2, 5}},
		{"at a middle boundary", 2, nil, []int64{0}},
		{"at the last batch", 5, nil, []int64{0, 2}},
		{"at the start: empty", 0, nil, nil},
		{"inside a batch", 3, ErrNotBatchBoundary, []int64{0, 2, 5}},
		{"past the end", 7, ErrOffsetOutOfRange, []int64{0, 2, 5}},
		{"before the start", -1, ErrOffsetOutOfRange, []int64{0, 2, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, sizes := filledLog(t, 2, 3, 1) // offsets 0-1, 2-4, 5
			before := l.Bounds()
			err := l.TruncateTo(tt.offset)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
				assert.Equal(t, before, l.Bounds(), "nothing changed")
			} else {
				require.NoError(t, err)
				var size int64
				for i := range tt.wantBases {
					size += int64(sizes[i])
				}
				assert.Equal(t, Bounds{Start: 0, End: min(tt.offset, 6), Size: size}, l.Bounds())
			}
			assert.Equal(t, tt.wantBases, bases(t, l))

			// Appends go on at the new end, contiguous.
			end := l.Bounds().End
			b, err := ParseBatch(batchtest.Values(1, "x", "y"))
			require.NoError(t, err)
			require.NoError(t, l.Append(b.place(end, 0, clocktest.New().Now())))
			raw, err := l.Read(nil, 0, end+2, 1<<20, false)
			require.NoError(t, err)
			recs, err := batchtest.Decode(raw)
			require.NoError(t, err)
			for i, r := range recs {
				assert.Equal(t, int64(i), r.Offset, "offsets stay contiguous")
			}
			assert.Len(t, recs, int(end+2))
		})
	}
}

func TestMemLogTruncateAfterDrop(t *testing.T) {
	l, _ := filledLog(t, 2, 3, 1)
	require.NoError(t, l.DropBefore(2))
	assert.ErrorIs(t, l.TruncateTo(0), ErrOffsetOutOfRange, "before the start")
	require.NoError(t, l.TruncateTo(2))
	assert.Equal(t, Bounds{Start: 2, End: 2}, l.Bounds(), "truncated to the start: empty, the start kept")
}

func TestMemLogReset(t *testing.T) {
	for _, start := range []int64{0, 3, 6, 100} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			l, _ := filledLog(t, 2, 3, 1)
			require.NoError(t, l.Reset(start))
			assert.Equal(t, Bounds{Start: start, End: start}, l.Bounds())
			assert.Empty(t, bases(t, l))
			b, err := ParseBatch(batchtest.Values(1, "x"))
			require.NoError(t, err)
			if start > 0 {
				assert.Error(t, l.Append(b.place(start-1, 0, clocktest.New().Now())), "a batch must go at the new end, or past it")
			}
			require.NoError(t, l.Append(b.place(start, 0, clocktest.New().Now())))
			assert.Equal(t, []int64{start}, bases(t, l))
			assert.Equal(t, start+1, l.Bounds().End)
		})
	}
	l, _ := filledLog(t, 1)
	assert.ErrorIs(t, l.Reset(-1), ErrOffsetOutOfRange)
}
