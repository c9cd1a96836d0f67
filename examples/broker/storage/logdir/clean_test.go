package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// setRecoveryPoint writes a checkpoint giving t-0 (testID) the recovery
// point offset.
func setRecoveryPoint(t *testing.T, path string, offset int64) {
	t.Helper()
	data := fmt.Sprintf("1\n1\nt 0 %d %s\n", offset, testID)
	require.NoError(t, os.WriteFile(filepath.Join(path, recoveryPointsName), []byte(data), 0o644))
}

// TestCleanShutdownMarker: Close records a clean shutdown, with every
// log's recovery point at its end; Open reads it and deletes it, so that a
// crash from then on is unclean.
func TestCleanShutdownMarker(t *testing.T) {
	path, _ := written(t, 8)
	marker := filepath.Join(path, cleanShutdownName)
	assert.True(t, exists(marker), "a clean close leaves the marker")
	points, err := readRecoveryPoints(filepath.Join(path, recoveryPointsName))
	require.NoError(t, err)
	assert.Equal(t, map[pointKey]recoveryPoint{{"t", 0}: {id: testID, offset: 8}}, points)

	d, err := Open(path, noSync)
	require.NoError(t, err)
	assert.True(t, d.CleanShutdown())
	assert.False(t, exists(marker), "deleted by Open")
	_, err = d.OpenLog("t", testID, 0)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	assert.True(t, exists(marker), "and written again by Close")

	// A broker that stops before recovering every partition (it failed
	// to start) leaves the next start to recover them as after a crash:
	// a torn tail there is no corruption.
	d, err = Open(path, noSync)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	assert.False(t, exists(marker), "t-0 was not recovered")
}

// TestCorruptionAfterCleanShutdownRefusesToStart: after a clean shutdown
// no tail is torn, so a flipped byte in the last batch (the case,
// which recovery took for a torn tail, deleting 1,411 acknowledged
// records) refuses the start with the file, position and offset, and the
// file is left as it is for the operator.
func TestCorruptionAfterCleanShutdownRefusesToStart(t *testing.T) {
	path, pos := written(t, 8)
	seg := segmentOf(path, 5)
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	data[len(data)-1] ^= 0x04
	require.NoError(t, os.WriteFile(seg, data, 0o644))

	_, _, err = reopen(t, path)
	require.Error(t, err)
	assert.ErrorIs(t, err, storage.ErrCorruptBatch)
	assert.Contains(t, err.Error(), seg)
	assert.Contains(t, err.Error(), fmt.Sprintf("position %d (offset 7)", pos[7]))
	assert.Contains(t, err.Error(), "shut down cleanly")
	st, err := os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), st.Size(), "nothing cut")
}

// TestTornTailOnlyPastTheRecoveryPoint: after an unclean shutdown, a bad
// last batch is cut if it starts at or past the recovery point (it may not
// have been fsynced), and refuses the start if it starts before (it was).
func TestTornTailOnlyPastTheRecoveryPoint(t *testing.T) {
	tests := []struct {
		name  string
		point int64
		cut   bool
	}{
		{"past the recovery point: cut", 7, true},
		{"no recovery point recorded: cut", -1, true},
		{"before the recovery point: refused", 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, pos := written(t, 8)
			crashed(t, path)
			if tt.point >= 0 {
				setRecoveryPoint(t, path, tt.point)
			}
			seg := segmentOf(path, 5)
			require.NoError(t, os.Truncate(seg, pos[7]+20)) // batch 7 torn
			l, _, err := reopen(t, path)
			if tt.cut {
				require.NoError(t, err)
				assert.Equal(t, int64(7), l.Bounds().End)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, storage.ErrCorruptBatch)
			assert.Contains(t, err.Error(), "offsets below 8 were fsynced")
		})
	}
}

// TestRecoveryPointPastTheEnd: a log that ends before its recovery point
// lost files that were fsynced: it refuses to open.
func TestRecoveryPointPastTheEnd(t *testing.T) {
	path, pos := written(t, 8)
	crashed(t, path)
	setRecoveryPoint(t, path, 8)
	require.NoError(t, os.Truncate(segmentOf(path, 5), pos[7])) // batch 7 gone, cleanly
	_, _, err := reopen(t, path)
	assert.ErrorIs(t, err, ErrInconsistent)
}

// TestRecoveryPointOfAnotherTopic: the recovery point of a deleted topic
// of the same name is not the new one's.
func TestRecoveryPointOfAnotherTopic(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	l := openTestLog(t, d)
	fill(t, 1000, []int{1, 1}, l)
	require.NoError(t, l.Remove())
	other := storage.TopicID{9}
	d.notePoint(pointKey{"t", 0}, recoveryPoint{id: testID, offset: 50}) // stale, as a checkpoint may be
	nl, err := d.OpenLog("t", other, 0)
	require.NoError(t, err, "not held to the old topic's point")
	assert.Equal(t, int64(0), nl.Bounds().End)
}

// TestNoMarkerAfterAFailure: a log that failed leaves the next start to
// check the directory as after a crash.
func TestNoMarkerAfterAFailure(t *testing.T) {
	path := t.TempDir()
	fail := false
	d, err := Open(path, WithFlush(1, 0), withSync(func(*os.File) error {
		if fail {
			return errors.New("disk gone")
		}
		return nil
	}))
	require.NoError(t, err)
	l := openTestLog(t, d)
	fill(t, 1000, []int{1}, l)
	fail = true
	assert.Error(t, l.Append(stored(t, 1, 1, 1000)))
	fail = false
	_ = d.Close()
	assert.False(t, exists(filepath.Join(path, cleanShutdownName)))

	d, err = Open(path, noSync)
	require.NoError(t, err)
	d.MarkUnclean() // as the broker does when its offsets log fails to close
	require.NoError(t, d.Close())
	assert.False(t, exists(filepath.Join(path, cleanShutdownName)))
}

// TestRecoveryCheckpointEveryInterval: the recovery points are written
// every log.flush.offset.checkpoint.interval.ms as fsyncs move them.
func TestRecoveryCheckpointEveryInterval(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path, WithFlush(1, 0), WithCheckpointInterval(10*time.Millisecond))
	l := openTestLog(t, d)
	fill(t, 1000, []int{2, 3}, l)
	require.Eventually(t, func() bool {
		points, err := readRecoveryPoints(filepath.Join(path, recoveryPointsName))
		return err == nil && points[pointKey{"t", 0}] == recoveryPoint{id: testID, offset: 5}
	}, 5*time.Second, 5*time.Millisecond, "every append fsynced: the point is the end")
}
