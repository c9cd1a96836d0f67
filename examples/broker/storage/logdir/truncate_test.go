package logdir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// agree checks that l holds what ref holds: the same bounds, the same
// bytes read from every offset, the same batches scanned, and segment
// indexes that are what the files on disk hold.
func agree(t *testing.T, ref storage.Log, l *Log) {
	t.Helper()
	b := ref.Bounds()
	require.Equal(t, b, l.Bounds())
	for offset := b.Start; offset <= b.End; offset++ {
		want, err := ref.Read(nil, offset, b.End, 1<<20, true)
		require.NoError(t, err)
		got, err := l.Read(nil, offset, b.End, 1<<20, true)
		require.NoError(t, err, "read from %d", offset)
		require.True(t, bytes.Equal(want, got), "read from %d: %d bytes, %d expected", offset, len(got), len(want))
	}
	var want, got []storage.BatchInfo
	require.NoError(t, ref.Scan(b.Start, func(i storage.BatchInfo) bool { i.AppendTime = 0; want = append(want, i); return true }))
	require.NoError(t, l.Scan(b.Start, func(i storage.BatchInfo) bool { i.AppendTime = 0; got = append(got, i); return true }))
	require.Equal(t, want, got, "scan")
	for _, s := range l.segs {
		onDisk, err := readIndex(indexPath(s.path))
		require.NoError(t, err)
		require.True(t, slices.Equal(s.index, onDisk), "segment %d: its index in memory (%v) is the one on disk (%v)", s.base, s.index, onDisk)
	}
}

// segmentBases returns the base offsets of l's segments.
func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segs {
		out = append(out, s.base)
	}
	return out
}

// segmentNames returns the .log files of segments at bases.
func segmentNames(bases ...int64) []string {
	var out []string
	for _, b := range bases {
		out = append(out, fmt.Sprintf("%020d%s", b, logSuffix))
	}
	return out
}

// reopenQuiet reopens the log dir at path and t-0, and checks that
// recovery had nothing to repair: no torn tail, no index rebuilt. Closing
// the directory it returns closes the log.
func reopenQuiet(t *testing.T, path string) (*Log, *Dir) {
	t.Helper()
	l, d, logs, err := reopenDir(t, path)
	require.NoError(t, err)
	assert.Zero(t, logs.Len(), "recovery warned: %v", logs.All())
	return l, d
}

// TestTruncateToAgreesWithMemoryLog truncates a log of several segments
// at every batch boundary, and checks it against the memory log truncated
// alike: after the truncation, after appends, and after a reopen.
func TestTruncateToAgreesWithMemoryLog(t *testing.T) {
	var boundaries []int64
	for _, b := range fill(t, 1000, counts(20), storage.NewMemLog()) {
		boundaries = append(boundaries, b.Info().BaseOffset)
	}
	const end = 39
	boundaries = append(boundaries, end) // the end: nothing to do
	for _, offset := range boundaries {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			path := t.TempDir()
			d := openTestDir(t, path, recoveryOpts...)
			l := openTestLog(t, d)
			ref := storage.NewMemLog()
			fill(t, 1000, counts(20), l, ref)
			require.Equal(t, int64(end), l.Bounds().End)
			before := segmentBases(l)
			require.Greater(t, len(before), 3, "several segments")

			require.NoError(t, l.TruncateTo(offset))
			require.NoError(t, ref.TruncateTo(offset))
			agree(t, ref, l)
			var kept []int64
			for _, b := range before {
				if b <= offset {
					kept = append(kept, b)
				}
			}
			assert.Equal(t, kept, segmentBases(l), "the segments after the one holding %d are gone", offset)
			assert.Equal(t, segmentNames(kept...), segmentFiles(t, filepath.Join(path, "t-0")), "their files too")

			fill(t, 2000, []int{2, 1}, l, ref)
			agree(t, ref, l)
			assert.Equal(t, seq(0, offset+3), offsets(t, readAll(t, l)), "appends go on at the new end")

			require.NoError(t, d.Close())
			l, _ = reopenQuiet(t, path)
			agree(t, ref, l)
		})
	}
}

func TestTruncateToRefuses(t *testing.T) {
	d := openTestDir(t, t.TempDir(), recoveryOpts...)
	l := openTestLog(t, d)
	ref := storage.NewMemLog()
	fill(t, 1000, counts(20), l, ref)
	start := l.segs[1].base
	require.NoError(t, l.DropBefore(start))
	require.NoError(t, ref.DropBefore(start))
	var inside int64 // inside a batch of several records
	require.NoError(t, ref.Scan(start, func(b storage.BatchInfo) bool { inside = b.LastOffset; return b.NumRecords() == 1 }))
	files := segmentFiles(t, l.dir)
	tests := []struct {
		name   string
		offset int64
		want   error
	}{
		{"inside a batch", inside, storage.ErrNotBatchBoundary},
		{"inside the last batch", l.Bounds().End - 1, storage.ErrNotBatchBoundary},
		{"past the end", l.Bounds().End + 1, storage.ErrOffsetOutOfRange},
		{"before the start", start - 1, storage.ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, l.TruncateTo(tt.offset), tt.want)
			agree(t, ref, l)
			assert.Equal(t, files, segmentFiles(t, l.dir), "no file touched")
		})
	}
	require.NoError(t, l.TruncateTo(start), "the start is a boundary")
	assert.Equal(t, storage.Bounds{Start: start, End: start}, l.Bounds(), "empty, the start kept")
	assert.Equal(t, segmentNames(start), segmentFiles(t, l.dir))
	require.NoError(t, l.Close())
	assert.ErrorIs(t, l.TruncateTo(start), ErrClosed)
	assert.ErrorIs(t, l.Reset(0), ErrClosed)
}

func TestReset(t *testing.T) {
	tests := []struct {
		name  string
		drop  int64 // DropBefore first
		start int64
	}{
		{"at the first segment's base", 0, 0},
		{"inside the log", 0, 7},
		{"at a later segment's base", 0, 10},
		{"at the end", 0, 20},
		{"after the end", 0, 1000},
		{"before a start that retention moved", 12, 3},
		{"at a start that retention moved", 12, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := written(t, 20) // segments at 0, 5, 10, 15
			l, d := reopenQuiet(t, path)
			require.NoError(t, l.DropBefore(tt.drop))
			require.NoError(t, l.Reset(tt.start))
			assert.Equal(t, storage.Bounds{Start: tt.start, End: tt.start}, l.Bounds())
			assert.Empty(t, readAll(t, l))
			assert.Equal(t, segmentNames(tt.start), segmentFiles(t, l.dir), "one empty segment, at the start")
			require.NoError(t, d.Close())

			l, d = reopenQuiet(t, path)
			assert.Equal(t, storage.Bounds{Start: tt.start, End: tt.start}, l.Bounds(), "reopened: empty at the start")
			if tt.start > 0 {
				assert.Error(t, l.Append(stored(t, tt.start-1, 1, 1000)), "a batch must go at the start, or past it")
			}
			fill(t, 1000, []int{2, 1}, l)
			assert.Equal(t, seq(tt.start, tt.start+3), offsets(t, readAll(t, l)))
			require.NoError(t, d.Close())

			l, _ = reopenQuiet(t, path)
			assert.Equal(t, seq(tt.start, tt.start+3), offsets(t, readAll(t, l)), "and so after another reopen")
		})
	}
}

func TestResetRefusesANegativeStart(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l := openTestLog(t, d)
	fill(t, 1000, []int{2}, l)
	assert.ErrorIs(t, l.Reset(-1), storage.ErrOffsetOutOfRange)
	assert.Equal(t, seq(0, 2), offsets(t, readAll(t, l)))
}

// crashAt is an fsync that, once armed, fails its n-th call: the
// operation calling it stops there, its earlier steps done and its later
// ones not, as a crash would stop it.
type crashAt struct {
	mu    sync.Mutex
	armed bool
	n     int
}

var errCrash = errors.New("crash")

func (c *crashAt) sync(*os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed {
		return nil
	}
	c.n--
	if c.n == 0 {
		return errCrash
	}
	return nil
}

func (c *crashAt) arm(n int) {
	c.mu.Lock()
	c.armed, c.n = true, n
	c.mu.Unlock()
}

// crashEverywhere runs op on a log of 20 one-record batches in segments
// of five (bases 0, 5, 10, 15), stopped at its first fsync, then its
// second, and so on until it completes, and after each stop reopens the
// log, which check then examines. It returns how many stops there were.
func crashEverywhere(t *testing.T, op func(*Log) error, check func(t *testing.T, l *Log)) int {
	t.Helper()
	for n := 1; ; n++ {
		path, _ := written(t, 20)
		c := &crashAt{}
		d, err := Open(path, append([]Option{withSync(c.sync)}, recoveryOpts...)...)
		require.NoError(t, err)
		l := openTestLog(t, d)
		c.arm(n)
		err = op(l)
		_ = d.Close() // the log may have failed: its close may fail too
		if err == nil {
			return n - 1
		}
		require.ErrorIs(t, err, errCrash, "stop %d", n)
		t.Run(fmt.Sprintf("stopped at fsync %d", n), func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			d, err := Open(path, append([]Option{noSync, WithLogger(zap.New(core))}, recoveryOpts...)...)
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			l, err := d.OpenLog("t", testID, 0)
			require.NoError(t, err, "the log opens after a crash at any step")
			for _, e := range logs.All() {
				assert.NotEqual(t, "truncated a torn tail", e.Message, "only whole batches were ever cut")
			}
			check(t, l.(*Log))
		})
	}
}

// TestTruncateToSurvivesACrashAtEveryStep: wherever a crash stops a
// truncation, the log reopens as a prefix of what it was, ending at or
// after the offset truncated to, and truncating again finishes the job.
func TestTruncateToSurvivesACrashAtEveryStep(t *testing.T) {
	const offset = 3 // inside the first segment: three later ones go
	stops := crashEverywhere(t, func(l *Log) error { return l.TruncateTo(offset) }, func(t *testing.T, l *Log) {
		b := l.Bounds()
		assert.Equal(t, int64(0), b.Start)
		assert.GreaterOrEqual(t, b.End, int64(offset))
		assert.Equal(t, seq(0, b.End), offsets(t, readAll(t, l)), "a prefix of the log")
		require.NoError(t, l.TruncateTo(offset))
		assert.Equal(t, seq(0, offset), offsets(t, readAll(t, l)), "truncating again finishes it")
		fill(t, 1000, []int{1}, l)
		assert.Equal(t, seq(0, offset+1), offsets(t, readAll(t, l)))
	})
	assert.Equal(t, 7, stops, "the recovery checkpoint's file and directory, three directory fsyncs, then the .log's and the .index's")
}

// TestResetSurvivesACrashAtEveryStep: wherever a crash stops a reset, the
// log reopens as a prefix of what it was, or empty at its old start or at
// the new one, and resetting again finishes the job.
func TestResetSurvivesACrashAtEveryStep(t *testing.T) {
	const start = 100
	stops := crashEverywhere(t, func(l *Log) error { return l.Reset(start) }, func(t *testing.T, l *Log) {
		b := l.Bounds()
		if b.Start == start {
			assert.Equal(t, storage.Bounds{Start: start, End: start}, b, "done: empty at the new start")
		} else {
			assert.Equal(t, int64(0), b.Start)
			assert.Equal(t, seq(0, b.End), offsets(t, readAll(t, l)), "a prefix of the log")
		}
		require.NoError(t, l.Reset(start))
		assert.Equal(t, storage.Bounds{Start: start, End: start}, l.Bounds(), "resetting again finishes it")
		fill(t, 1000, []int{1}, l)
		assert.Equal(t, seq(start, start+1), offsets(t, readAll(t, l)))
	})
	assert.Equal(t, 8, stops, "the recovery checkpoint's file and directory, three directory fsyncs, the first segment's two files, the directory after the rename")
}

// TestResetCrashBetweenItsRenames leaves the first segment emptied and its
// index renamed to the new start, but not its .log, as a crash between the
// two renames would: the log reopens empty at its old start.
func TestResetCrashBetweenItsRenames(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	l := openTestLog(t, d)
	require.NoError(t, l.Reset(0))
	require.NoError(t, d.Close())
	dir := filepath.Join(path, "t-0")
	require.NoError(t, os.Rename(indexPath(segmentPath(dir, 0)), indexPath(segmentPath(dir, 100))))

	l, _, err := reopen(t, path)
	require.NoError(t, err)
	assert.Equal(t, storage.Bounds{}, l.Bounds())
	assert.Equal(t, []string{firstIndex, firstLog}, files(t, dir)[:2], "the orphan index went, the .log got one again")
	require.NoError(t, l.Reset(100))
	assert.Equal(t, storage.Bounds{Start: 100, End: 100}, l.Bounds())
}

// TestFlushOvertakenByATruncation: a flush that captured the active
// segment before a truncation must not count the offsets it captured as
// fsynced, since the truncation cut them and appends may have written
// others there since. The flusher's fsync runs the truncation and the
// appends, as if they overtook it.
func TestFlushOvertakenByATruncation(t *testing.T) {
	var l *Log
	overtake := false
	sync := func(*os.File) error {
		if overtake {
			overtake = false
			require.NoError(t, l.TruncateTo(2))
			fill(t, 1000, []int{1, 1}, l)
		}
		return nil
	}
	d := openTestDir(t, t.TempDir(), withSync(sync))
	l = openTestLog(t, d)
	fill(t, 1000, []int{1, 1, 1, 1}, l)
	overtake = true
	l.flushIfDirty()
	require.False(t, overtake, "the flush ran its fsync")
	l.mu.RLock()
	defer l.mu.RUnlock()
	assert.Equal(t, int64(4), l.endLocked())
	assert.Equal(t, int64(2), l.flushed, "the truncation fsynced up to its offset; the appends after it are not")
}
