package logdir

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openFiles counts the files this process holds open under dir.
func openFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && len(target) > len(dir) && target[:len(dir)] == dir {
			n++
		}
	}
	return n
}

// TestSealedSegmentFilesBounded: however many sealed segments the logs
// hold, at most WithOpenSegments of their files are open (the issue's
// small segments, filled by ordinary produce, each held a file descriptor
// until the broker ran out); every batch still reads back, its file opened
// again when needed, and so after a restart.
func TestSealedSegmentFilesBounded(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path, WithOpenSegments(3), WithSegmentBytes(200))
	var logs []*Log
	for p := range int32(3) {
		l, err := d.OpenLog("t", testID, p)
		require.NoError(t, err)
		logs = append(logs, l.(*Log))
	}
	for range 20 { // about one segment per batch: 20 per log
		for _, l := range logs {
			fill(t, 1000, []int{3}, l)
		}
	}
	open, _ := d.OpenSegments()
	assert.LessOrEqual(t, open, 3)
	// Three logs, each an active .log and .index, the lock, and the
	// sealed files the cache keeps.
	assert.LessOrEqual(t, openFiles(t, path), 3*2+1+3)

	for _, l := range logs {
		assert.Equal(t, seq(0, 60), offsets(t, readAll(t, l)), "every batch reads back")
	}
	open, reopened := d.OpenSegments()
	assert.LessOrEqual(t, open, 3)
	assert.Greater(t, reopened, 0, "closed files were opened again to be read")

	for _, l := range logs {
		require.NoError(t, l.Close())
	}
	require.NoError(t, d.Close())
	d = openTestDir(t, path, WithOpenSegments(3), WithSegmentBytes(200))
	for p := range int32(3) {
		l, err := d.OpenLog("t", testID, p)
		require.NoError(t, err)
		assert.Equal(t, seq(0, 60), offsets(t, readAll(t, l)), "recovered")
	}
	assert.LessOrEqual(t, openFiles(t, path), 3*2+1+3, "recovery keeps no more open")
}

// TestSealedSegmentFilesConcurrentReads: readers of many sealed segments
// at once, the cache holding one file: a file being read is never closed
// under its reader (the race detector and the reads' results say so).
func TestSealedSegmentFilesConcurrentReads(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithOpenSegments(1), WithSegmentBytes(200))
	l := openTestLog(t, d)
	fill(t, 1000, repeat(3, 30), l)
	var wg sync.WaitGroup
	for r := range 8 {
		wg.Go(func() {
			for i := range 50 {
				offset := int64((r*7 + i*3) % 90)
				raw, err := l.Read(nil, offset, 90, 1, true)
				if !assert.NoError(t, err) {
					return
				}
				var b kmsg.RecordBatch
				if assert.NoError(t, b.ReadFrom(raw)) {
					assert.LessOrEqual(t, b.FirstOffset, offset)
					assert.Greater(t, b.FirstOffset+int64(b.LastOffsetDelta), offset-1)
				}
			}
		})
	}
	wg.Wait()
	open, _ := d.OpenSegments()
	assert.LessOrEqual(t, open, 1)
}

// TestTruncateIntoAClosedSealedSegment: a truncation into a sealed segment
// whose file the cache closed reopens it for appends.
func TestTruncateIntoAClosedSealedSegment(t *testing.T) {
	d := openTestDir(t, t.TempDir(), WithOpenSegments(1), WithSegmentBytes(200))
	l := openTestLog(t, d)
	fill(t, 1000, repeat(3, 10), l)
	require.NoError(t, l.TruncateTo(6))
	fill(t, 1000, []int{3}, l)
	assert.Equal(t, seq(0, 9), offsets(t, readAll(t, l)))
	require.NoError(t, l.DropBefore(6))
	assert.Equal(t, seq(6, 9), offsets(t, readAll(t, l)))
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}
