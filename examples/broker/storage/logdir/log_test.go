package logdir

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// counts returns n record counts cycling through 1, 2 and 3.
func counts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1 + i%3
	}
	return out
}

// TestReadsAgreeWithMemoryLog appends the same batches to a segment log
// (small segments, a dense index) and to the memory log, and checks that
// every read and scan from every offset agrees.
func TestReadsAgreeWithMemoryLog(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithSegmentBytes(400), WithIndexIntervalBytes(100))
	l := openTestLog(t, d)
	ref := storage.NewMemLog()
	batches := fill(t, 1000, counts(40), l, ref)
	assert.Equal(t, ref.Bounds(), l.Bounds())
	segs := segmentFiles(t, filepath.Join(d.Path(), "t-0"))
	assert.Greater(t, len(segs), 5, "400-byte segments roll often")
	size := batches[0].Info().Size

	end := l.Bounds().End
	for offset := int64(0); offset <= end; offset++ {
		for _, tt := range []struct {
			limit    int64
			maxBytes int
			minOne   bool
		}{
			{end, 1 << 20, false},
			{end, 1 << 20, true},
			{end - 5, 1 << 20, false},
			{end, 3*size + 1, false},
			{end, 10, false},
			{end, 10, true},
			{offset + 1, 1 << 20, true},
		} {
			name := fmt.Sprintf("from %d to %d, %d bytes, min one %v", offset, tt.limit, tt.maxBytes, tt.minOne)
			want, err := ref.Read(nil, offset, tt.limit, tt.maxBytes, tt.minOne)
			require.NoError(t, err)
			got, err := l.Read([]byte("prefix"), offset, tt.limit, tt.maxBytes, tt.minOne)
			require.NoError(t, err, name)
			require.Equal(t, "prefix", string(got[:6]), "appends to dst")
			require.True(t, bytes.Equal(want, got[6:]), "%s: %d bytes read, %d expected", name, len(got)-6, len(want))
		}
		var want, got []storage.BatchInfo
		require.NoError(t, ref.Scan(offset, func(b storage.BatchInfo) bool { want = append(want, b); return true }))
		require.NoError(t, l.Scan(offset, func(b storage.BatchInfo) bool { b.AppendTime = 0; got = append(got, b); return true }))
		for i := range want {
			want[i].AppendTime = 0
		}
		require.Equal(t, want, got, "scan from %d", offset)
	}
	assert.Equal(t, offsets(t, readAll(t, ref)), offsets(t, readAll(t, l)))
}

func TestIndexEntries(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithIndexIntervalBytes(200))
	l := openTestLog(t, d)
	batches := fill(t, 1000, counts(30), l)
	s := l.active()
	require.Len(t, l.segs, 1)
	// Kafka's rule: a batch gets an entry when more than the interval
	// was appended since the last entry.
	var want []indexEntry
	since, pos := int64(0), int64(0)
	for _, b := range batches {
		if since > 200 {
			want = append(want, indexEntry{rel: uint32(b.Info().LastOffset), pos: uint32(pos)})
			since = 0
		}
		since += int64(b.Info().Size)
		pos += int64(b.Info().Size)
	}
	assert.Equal(t, want, s.index)
	onDisk, err := readIndex(indexPath(s.path))
	require.NoError(t, err)
	assert.Equal(t, want, onDisk, "the .index holds the same entries")

	for offset := int64(0); offset < l.Bounds().End; offset++ {
		start := lookup(s.index, offset)
		found, err := s.find(offset)
		require.NoError(t, err)
		assert.LessOrEqual(t, start, found, "offset %d: the scan starts at or before its batch", offset)
		assert.LessOrEqual(t, found-start, int64(200+batches[0].Info().Size*3), "offset %d: and scans about an interval at most", offset)
	}
}

func TestRollBySize(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithSegmentBytes(250))
	l := openTestLog(t, d)
	batches := fill(t, 1000, []int{1, 1, 1, 1, 1}, l)
	size := int64(batches[0].Info().Size)
	perSegment := 250 / size
	var bases []int64
	for _, s := range l.segs {
		bases = append(bases, s.base)
		assert.LessOrEqual(t, s.size, int64(250), "no segment passes log.segment.bytes")
	}
	var want []int64
	for b := int64(0); b < 5; b += perSegment {
		want = append(want, b)
	}
	assert.Equal(t, want, bases, "%d-byte batches, %d per segment", size, perSegment)

	// A batch larger than a segment has one of its own.
	big := stored(t, 5, 60, 1000)
	require.Greater(t, big.Info().Size, 250)
	require.NoError(t, l.Append(big))
	require.NoError(t, l.Append(stored(t, 65, 1, 1000)))
	last := l.segs[len(l.segs)-2:]
	assert.Equal(t, []int64{5, 65}, []int64{last[0].base, last[1].base})
	assert.Equal(t, offsets(t, readAll(t, l)), seq(0, 66))
}

// TestTopicSegmentBytes: a topic given a segment size of its own rolls at
// it; the others at the directory's.
func TestTopicSegmentBytes(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithSegmentBytes(1<<20), WithTopicSegmentBytes("small", 250))
	small, err := d.OpenLog("small", testID, 0)
	require.NoError(t, err)
	other := openTestLog(t, d)
	fill(t, 1000, []int{1, 1, 1, 1, 1}, small)
	fill(t, 1000, []int{1, 1, 1, 1, 1}, other)
	assert.Greater(t, len(small.(*Log).segs), 1, "the topic's own size")
	assert.Len(t, other.segs, 1, "the directory's size")

	_, err = Open(t.TempDir(), WithTopicSegmentBytes("small", 1))
	assert.ErrorIs(t, err, ErrInvalidOption)
}

// seq returns the offsets from..to-1.
func seq(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func TestRollByTime(t *testing.T) {
	clk := clocktest.New()
	d := openTestDir(t, t.TempDir(), WithRollAfter(time.Hour), WithClock(clk))
	l := openTestLog(t, d)
	fill(t, 1000, []int{1}, l)
	clk.Advance(59 * time.Minute)
	fill(t, 1000, []int{1}, l)
	assert.Len(t, l.segs, 1, "not an hour old yet")
	clk.Advance(time.Minute)
	fill(t, 1000, []int{1}, l)
	assert.Len(t, l.segs, 2, "an hour after the segment was made, the next append rolls")
	assert.Equal(t, int64(2), l.active().base)
	clk.Advance(2 * time.Hour)
	assert.Len(t, l.segs, 2, "an empty or idle segment is not rolled by time alone")
}

func TestDropBeforeDeletesWholeSegments(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithSegmentBytes(250))
	l := openTestLog(t, d)
	fill(t, 1000, []int{1, 1, 1, 1, 1, 1, 1}, l) // three per segment: bases 0, 3, 6
	dir := filepath.Join(d.Path(), "t-0")
	require.Equal(t, []string{fmt.Sprintf("%020d.log", 0), fmt.Sprintf("%020d.log", 3), fmt.Sprintf("%020d.log", 6)}, segmentFiles(t, dir))

	var segs []storage.Segment
	require.NoError(t, l.Segments(func(s storage.Segment) bool { segs = append(segs, s); return true }))
	require.Len(t, segs, 3)
	assert.Equal(t, storage.Segment{BaseOffset: 3, NextOffset: 6, Size: segs[1].Size, MaxTime: 1000}, segs[1])

	require.NoError(t, l.DropBefore(2))
	assert.Equal(t, int64(0), l.Bounds().Start, "offset 2 is inside the first segment: it stays whole")
	require.NoError(t, l.DropBefore(5))
	assert.Equal(t, int64(3), l.Bounds().Start, "the first segment ended before 5: gone, the start is the next one's base")
	assert.Len(t, segmentFiles(t, dir), 2)
	assert.Equal(t, seq(3, 7), offsets(t, readAll(t, l)))
	assert.Equal(t, segs[1].Size+segs[2].Size, l.Bounds().Size)
	assert.Error(t, l.DropBefore(8), "past the end")

	require.NoError(t, l.DropBefore(7))
	assert.Equal(t, storage.Bounds{Start: 7, End: 7}, l.Bounds(), "every batch gone: the log starts at its end")
	assert.Equal(t, []string{fmt.Sprintf("%020d.log", 7)}, segmentFiles(t, dir), "an empty active segment was rolled at the end")
	require.NoError(t, l.DropBefore(7), "nothing left to drop")
	fill(t, 1000, []int{2}, l)
	assert.Equal(t, seq(7, 9), offsets(t, readAll(t, l)), "appends go on at the end")
}

func TestReopenGivesSameContent(t *testing.T) {
	path := t.TempDir()
	d, err := Open(path, noSync, WithSegmentBytes(300), WithIndexIntervalBytes(100))
	require.NoError(t, err)
	l := openTestLog(t, d)
	fill(t, 1000, counts(20), l)
	require.NoError(t, l.DropBefore(4))
	before, bounds := readAll(t, l), l.Bounds()
	var segsBefore []storage.Segment
	require.NoError(t, l.Segments(func(s storage.Segment) bool { segsBefore = append(segsBefore, s); return true }))
	indexes := make(map[int64][]indexEntry)
	for _, s := range l.segs {
		indexes[s.base] = s.index
	}
	require.NoError(t, l.Close())
	require.NoError(t, d.Close())

	d = openTestDir(t, path, WithSegmentBytes(300), WithIndexIntervalBytes(100))
	l = openTestLog(t, d)
	assert.Equal(t, bounds, l.Bounds())
	assert.Equal(t, before, readAll(t, l))
	var segsAfter []storage.Segment
	require.NoError(t, l.Segments(func(s storage.Segment) bool { segsAfter = append(segsAfter, s); return true }))
	assert.Equal(t, segsBefore, segsAfter)
	for _, s := range l.segs {
		assert.Equal(t, indexes[s.base], s.index, "segment %d: its index was kept", s.base)
	}
	fill(t, 1000, []int{1}, l)
	assert.Equal(t, bounds.End+1, l.Bounds().End)
}

func TestRemoveDeletesThePartition(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l := openTestLog(t, d)
	fill(t, 1000, []int{3}, l)
	require.NoError(t, l.Remove())
	assert.NoDirExists(t, filepath.Join(d.Path(), "t-0"))
	assert.NotContains(t, fmt.Sprint(files(t, d.Path())), deleteSuffix, "nothing left half-deleted")
	assert.ErrorIs(t, l.Append(stored(t, 3, 1, 0)), ErrClosed)
	_, err := l.Read(nil, 0, 3, 100, true)
	assert.ErrorIs(t, err, ErrClosed)

	l = openTestLog(t, d)
	assert.Equal(t, storage.Bounds{}, l.Bounds(), "opened again: a new, empty partition")
}

func TestStaleDirectoryOfADeletedTopicIsReplaced(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l := openTestLog(t, d)
	fill(t, 1000, []int{3}, l)
	require.NoError(t, l.Close())
	// As if the topic was deleted and a crash came before its
	// directories went: a new topic of the same name must not inherit
	// them.
	other, err := d.OpenLog("t", storage.TopicID{9}, 0)
	require.NoError(t, err)
	assert.Equal(t, storage.Bounds{}, other.Bounds())
	id, err := readPartitionMeta(filepath.Join(d.Path(), "t-0"))
	require.NoError(t, err)
	assert.Equal(t, storage.TopicID{9}, id)
	require.NoError(t, other.Close())
}

func TestAppendRefusesAnOffsetBeforeTheEnd(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l := openTestLog(t, d)
	fill(t, 1000, []int{2}, l)
	assert.Error(t, l.Append(stored(t, 1, 1, 0)), "a batch must go at the end")
	assert.Equal(t, int64(2), l.Bounds().End)
	require.NoError(t, l.Append(stored(t, 5, 1, 0)), "or past it: a compacted leader's gap")
	assert.Equal(t, int64(6), l.Bounds().End)
}

// TestDropBeforeContract holds both Log implementations to the contract's
// words: DropBefore(offset) deletes only whole segments whose batches all
// end before offset, keeps every batch that does not, and leaves the start
// at the base of the first batch kept (so never past offset), or at the
// end when none is.
func TestDropBeforeContract(t *testing.T) {
	partial := 0 // drops that kept batches below offset: a segment partly covered
	for _, offset := range []int64{0, 1, 2, 3, 7, 8, 13, 20, 29, 30} {
		d := openTestDir(t, t.TempDir(), WithSegmentBytes(300))
		seg := openTestLog(t, d)
		mem := storage.NewMemLog()
		fill(t, 1000, counts(15), seg, mem) // offsets 0 to 29
		for name, l := range map[string]storage.Log{"segment log": seg, "memory log": mem} {
			var before []storage.BatchInfo
			require.NoError(t, l.Scan(0, func(b storage.BatchInfo) bool { before = append(before, b); return true }))
			// Append times are the segment's after a drop: compare the rest.
			for i := range before {
				before[i].AppendTime = 0
			}
			require.NoError(t, l.DropBefore(offset), "%s, drop before %d", name, offset)
			b := l.Bounds()
			assert.LessOrEqual(t, b.Start, max(offset, 0), "%s, drop before %d: the start never passes offset", name, offset)
			var kept []storage.BatchInfo
			require.NoError(t, l.Scan(b.Start, func(bi storage.BatchInfo) bool {
				bi.AppendTime = 0
				kept = append(kept, bi)
				return true
			}))
			for _, bi := range before {
				if bi.LastOffset >= offset {
					assert.Contains(t, kept, bi, "%s, drop before %d: batch %d ends at or after it", name, offset, bi.BaseOffset)
				}
			}
			if len(kept) > 0 {
				assert.Equal(t, kept[0].BaseOffset, b.Start, "%s: the start is the first kept batch's base", name)
			} else {
				assert.Equal(t, b.End, b.Start, "%s: nothing kept, the start is the end", name)
			}
			var size int64
			for _, bi := range kept {
				size += int64(bi.Size)
			}
			assert.Equal(t, size, b.Size, "%s: the size is what is kept", name)
			if name == "segment log" && len(kept) > 0 && kept[0].LastOffset < offset {
				partial++
			}
		}
	}
	assert.Positive(t, partial, "the offsets chosen cover partly covered segments")
}
