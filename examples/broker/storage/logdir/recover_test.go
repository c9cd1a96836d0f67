package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// recoveryOpts make segments of five one-record batches and index every
// other batch or so.
var recoveryOpts = []Option{WithSegmentBytes(400), WithIndexIntervalBytes(100)}

// written writes n one-record batches to partition t-0 of a new log dir,
// closes it, and returns the directory and each batch's position in its
// segment file.
func written(t *testing.T, n int) (string, []int64) {
	t.Helper()
	path := t.TempDir()
	d, err := Open(path, append([]Option{noSync}, recoveryOpts...)...)
	require.NoError(t, err)
	l := openTestLog(t, d)
	var pos []int64
	for i := range n {
		if l.active().size > 0 && l.active().size+int64(stored(t, int64(i), 1, 1000).Info().Size) > 400 {
			pos = append(pos, 0)
		} else {
			pos = append(pos, l.active().size)
		}
		fill(t, 1000, []int{1}, l)
	}
	require.Len(t, l.segs, (n+4)/5, "five batches a segment")
	require.NoError(t, d.Close())
	return path, pos
}

// crashed makes the log dir at path look as a crash leaves it before any
// recovery checkpoint: no clean-shutdown marker, no recovery points.
// Recovery then cuts a torn tail anywhere in the active segment.
func crashed(t *testing.T, path string) {
	t.Helper()
	for _, name := range []string{cleanShutdownName, recoveryPointsName} {
		require.NoError(t, os.Remove(filepath.Join(path, name)))
	}
}

// reopen opens the log dir at path and partition t-0 again, closing both
// at the end of the test, and returns what recovery logged.
func reopen(t *testing.T, path string) (*Log, *observer.ObservedLogs, error) {
	t.Helper()
	l, _, logs, err := reopenDir(t, path)
	return l, logs, err
}

// reopenDir is reopen, returning the directory too, for a test that closes
// it before the end.
func reopenDir(t *testing.T, path string) (*Log, *Dir, *observer.ObservedLogs, error) {
	t.Helper()
	core, logs := observer.New(zap.WarnLevel)
	d, err := Open(path, append([]Option{noSync, WithLogger(zap.New(core))}, recoveryOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	l, err := d.OpenLog("t", testID, 0)
	if err != nil {
		return nil, d, logs, err
	}
	return l.(*Log), d, logs, nil
}

// segment returns the path of t-0's segment at base.
func segmentOf(path string, base int64) string { return segmentPath(filepath.Join(path, "t-0"), base) }

// TestTornTailAtEveryLength cuts the active segment at every length, as a
// crash in the middle of a write may: the log reopens ending at the last
// whole batch, reads exactly the batches before it, and appends go on from
// there.
func TestTornTailAtEveryLength(t *testing.T) {
	path, pos := written(t, 8) // segments at 0 (batches 0-4) and 5 (5-7)
	crashed(t, path)
	seg := segmentOf(path, 5)
	whole, err := os.ReadFile(seg)
	require.NoError(t, err)
	index, err := os.ReadFile(indexPath(seg))
	require.NoError(t, err)
	size := int64(len(whole))
	for n := int64(0); n <= size; n++ {
		require.NoError(t, os.WriteFile(seg, whole[:n], 0o644))
		require.NoError(t, os.WriteFile(indexPath(seg), index, 0o644))
		l, d, logs, err := reopenDir(t, path)
		require.NoError(t, err, "cut at %d", n)
		end := int64(5)
		for i := 5; i < 8; i++ {
			next := size
			if i < 7 {
				next = pos[i+1]
			}
			if next <= n {
				end = int64(i + 1)
			}
		}
		require.Equal(t, storage.Bounds{Start: 0, End: end, Size: l.Bounds().Size}, l.Bounds(), "cut at %d", n)
		require.Equal(t, seq(0, end), offsets(t, readAll(t, l)), "cut at %d", n)
		if n < size && (end == 8 || n != pos[end]) {
			require.Equal(t, 1, logs.FilterMessage("truncated a torn tail").Len(), "cut at %d: a warning says so", n)
		}
		require.NoError(t, l.Append(stored(t, end, 1, 1000)), "cut at %d", n)
		require.Equal(t, seq(0, end+1), offsets(t, readAll(t, l)))
		require.NoError(t, d.Close())
		crashed(t, path)
	}
}

// TestFlippedBitInLastBatch: after a crash, a last batch whose checksum
// fails is a torn tail (its write did not all reach the disk) and goes;
// nothing corrupt is ever served.
func TestFlippedBitInLastBatch(t *testing.T) {
	for _, at := range []string{"records", "header"} {
		t.Run(at, func(t *testing.T) {
			path, pos := written(t, 8)
			crashed(t, path)
			seg := segmentOf(path, 5)
			data, err := os.ReadFile(seg)
			require.NoError(t, err)
			i := len(data) - 1
			if at == "header" {
				i = int(pos[7]) + 30 // the max timestamp: covered by the checksum
			}
			data[i] ^= 0x04
			require.NoError(t, os.WriteFile(seg, data, 0o644))
			l, logs, err := reopen(t, path)
			require.NoError(t, err)
			assert.Equal(t, int64(7), l.Bounds().End, "the log ends before the bad batch")
			assert.Equal(t, seq(0, 7), offsets(t, readAll(t, l)))
			entry := logs.FilterMessage("truncated a torn tail").All()
			require.Len(t, entry, 1)
			assert.Equal(t, pos[7], entry[0].ContextMap()["position"])
			st, err := os.Stat(seg)
			require.NoError(t, err)
			assert.Equal(t, pos[7], st.Size(), "the file was cut")
		})
	}
}

// TestCorruptionRefusesToOpen: a bad batch that no crash explains (in a
// sealed segment, or with whole batches after it) is an error that names
// the file, the position and the offset; the log does not open.
func TestCorruptionRefusesToOpen(t *testing.T) {
	tests := []struct {
		name   string
		base   int64 // the segment tampered with
		edit   func(data []byte, pos []int64) []byte
		expect []string
	}{
		{"a flipped bit in a sealed segment", 0, func(d []byte, pos []int64) []byte { d[pos[2]+40] ^= 1; return d },
			[]string{"00000000000000000000.log", "offset 2", "CRC-32C"}},
		{"the last batch of a sealed segment flipped", 0, func(d []byte, pos []int64) []byte { d[len(d)-1] ^= 1; return d },
			[]string{"sealed segment", "00000000000000000000.log", "offset 4"}},
		{"a sealed segment cut short", 0, func(d []byte, pos []int64) []byte { return d[:len(d)-1] },
			[]string{"sealed segment", "offset 4"}},
		{"a flipped bit in the middle of the active segment", 5, func(d []byte, pos []int64) []byte { d[pos[6]+40] ^= 1; return d },
			[]string{"00000000000000000005.log", "offset 6", "a whole batch follows"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, pos := written(t, 8)
			seg := segmentOf(path, tt.base)
			data, err := os.ReadFile(seg)
			require.NoError(t, err)
			edited := tt.edit(data, pos)
			require.NoError(t, os.WriteFile(seg, edited, 0o644))
			_, _, err = reopen(t, path)
			require.ErrorIs(t, err, storage.ErrCorruptBatch)
			for _, s := range tt.expect {
				assert.ErrorContains(t, err, s)
			}
			after, err := os.ReadFile(seg)
			require.NoError(t, err)
			assert.Equal(t, edited, after, "nothing was truncated")
		})
	}
}

func TestMissingSegmentRefusesToOpen(t *testing.T) {
	path, _ := written(t, 12) // segments at 0, 5, 10
	require.NoError(t, os.Remove(segmentOf(path, 5)))
	_, _, err := reopen(t, path)
	assert.ErrorIs(t, err, ErrInconsistent)
	assert.ErrorContains(t, err, "ends at offset 5, but the next segment starts at 10")
}

func TestVanishedSegmentsRefuseToOpen(t *testing.T) {
	path, _ := written(t, 3)
	require.NoError(t, os.Remove(segmentOf(path, 0)))
	_, _, err := reopen(t, path)
	assert.ErrorIs(t, err, ErrInconsistent, "a partition that had batches is not opened empty")
	assert.ErrorContains(t, err, "no segment file")
}

// TestIndexesRebuilt: an index that is missing, torn or wrong is rebuilt
// from its segment, and reads are right either way.
func TestIndexesRebuilt(t *testing.T) {
	tests := []struct {
		name string
		edit func(path string) error
	}{
		{"missing", func(p string) error { return os.Remove(p) }},
		{"torn", func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, data[:len(data)-3], 0o644)
		}},
		{"pointing inside a batch", func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			data[7]++ // the first entry's position
			return os.WriteFile(p, data, 0o644)
		}},
		{"pointing past the end", func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, append(data, 0, 0, 0, 50, 0, 0, 10, 0), 0o644)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := written(t, 10)
			want := make(map[int64][]byte)
			for _, base := range []int64{0, 5} {
				var err error
				want[base], err = os.ReadFile(indexPath(segmentOf(path, base)))
				require.NoError(t, err)
				require.NotEmpty(t, want[base], "the test needs index entries")
				require.NoError(t, tt.edit(indexPath(segmentOf(path, base))))
			}
			l, logs, err := reopen(t, path)
			require.NoError(t, err)
			assert.Equal(t, 2, logs.FilterMessage("rebuilt an offset index").Len())
			for base, idx := range want {
				got, err := os.ReadFile(indexPath(segmentOf(path, base)))
				require.NoError(t, err)
				assert.Equal(t, idx, got, "segment %d: rebuilt as it was written", base)
			}
			for o := int64(0); o < 10; o++ {
				raw, err := l.Read(nil, o, 10, 1<<20, true)
				require.NoError(t, err)
				assert.Equal(t, seq(o, 10), offsets(t, raw))
			}
		})
	}
}

// TestLeftoversRemoved: what a crash leaves in the middle of an operation
// is cleaned up on open.
func TestLeftoversRemoved(t *testing.T) {
	path, _ := written(t, 3)
	dir := filepath.Join(path, "t-0")
	orphan := filepath.Join(dir, fmt.Sprintf("%020d.index", 100)) // a deletion cut short
	tmp := filepath.Join(dir, partitionMeta+atomicfile.TmpSuffix) // an atomic write cut short
	gone := filepath.Join(path, "u-0.abc"+deleteSuffix)           // a topic deletion cut short
	catalogTmp := filepath.Join(path, catalogName+atomicfile.TmpSuffix)
	for _, f := range []string{orphan, tmp, catalogTmp} {
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(gone, "x"), 0o755))
	l, _, err := reopen(t, path)
	require.NoError(t, err)
	assert.Equal(t, int64(3), l.Bounds().End)
	assert.NoFileExists(t, orphan)
	assert.NoFileExists(t, tmp)
	assert.NoFileExists(t, catalogTmp)
	assert.NoDirExists(t, gone)
}

func TestOpenErrorsAreNotCorruption(t *testing.T) {
	path, _ := written(t, 3)
	require.NoError(t, os.Chmod(segmentOf(path, 0), 0o000))
	t.Cleanup(func() { _ = os.Chmod(segmentOf(path, 0), 0o644) })
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	_, _, err := reopen(t, path)
	require.Error(t, err)
	assert.False(t, errors.Is(err, storage.ErrCorruptBatch), "a file that cannot be read is not a corrupt one: %v", err)
}
