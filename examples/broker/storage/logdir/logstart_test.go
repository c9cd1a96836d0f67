package logdir_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// TestDeleteRecordsSurvivesRestart: a log start DeleteRecords put inside a
// batch, in a segment after the first, is where the partition starts
// after a restart, though its segment still holds the records before it;
// a truncation that lowers it is kept too, and a checkpoint that is not
// one refuses the open rather than serve deleted records.
func TestDeleteRecordsSurvivesRestart(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path, logdir.WithSegmentBytes(300))
	topic, err := s.CreateTopic("t", 1, storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 4000})
	require.NoError(t, err)
	p := topic.Partitions[0]
	for range 20 {
		_, err := p.Append(batchtest.Values(time.Now().UnixMilli(), "x", "y")) // 0-1, 2-3, ..., 38-39
		require.NoError(t, err)
	}
	segments, err := filepath.Glob(filepath.Join(path, "t-0", "*.log"))
	require.NoError(t, err)
	start, err := p.DeleteRecords(25)
	require.NoError(t, err)
	require.Equal(t, int64(25), start)
	kept, err := filepath.Glob(filepath.Join(path, "t-0", "*.log"))
	require.NoError(t, err)
	assert.Less(t, len(kept), len(segments), "the segments before it are deleted")
	assert.NotContains(t, kept, filepath.Join(path, "t-0", "00000000000000000000.log"))
	closeFirst()

	reopen := func() (*storage.Partition, func()) {
		t.Helper()
		s, closeIt := openStore(t, path, logdir.WithSegmentBytes(300))
		p, err := s.Partition("t", 0)
		require.NoError(t, err)
		return p, closeIt
	}
	p, closeSecond := reopen()
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, storage.Offsets{LogStart: 25, HighWatermark: 40, LastStable: 40, LogEnd: 40}, o,
		"the log start inside the batch 24-25, after a restart")
	_, err = p.Read(24, storage.ReadUncommitted, 1<<20, true)
	assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange, "the deleted records are not served again")
	require.NotEmpty(t, p.LeaderEpochs())
	assert.Equal(t, int64(25), p.LeaderEpochs()[0].StartOffset, "the leader-epoch cache starts at the log start")

	require.NoError(t, p.TruncateTo(24), "a follower cut back below its log start")
	_, err = p.Append(batchtest.Values(time.Now().UnixMilli(), "x", "y")) // 24-25 again
	require.NoError(t, err)
	closeSecond()
	p, closeThird := reopen()
	o, err = p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(24), o.LogStart, "the lowered log start, not the one written before")
	assert.Equal(t, int64(26), o.LogEnd)
	closeThird()

	require.NoError(t, os.WriteFile(filepath.Join(path, "t-0", "log-start-offset-checkpoint"), []byte("7\nx\n"), 0o644))
	d, err := logdir.Open(path)
	require.NoError(t, err)
	_, err = storage.New(storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d), storage.WithRetentionCheckInterval(0))
	assert.ErrorIs(t, err, logdir.ErrInconsistent, "a checkpoint that is not one refuses the open")
	require.NoError(t, d.Close())
}
