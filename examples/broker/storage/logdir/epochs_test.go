package logdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// epochStore opens the log dir at path and a store on it; close closes
// both. The store's warnings are returned.
func epochStore(t *testing.T, path string) (p *storage.Partition, logs *observer.ObservedLogs, close func()) {
	t.Helper()
	d, err := Open(path, noSync)
	require.NoError(t, err)
	core, logs := observer.New(zap.WarnLevel)
	s, err := storage.New(storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d),
		storage.WithRetentionCheckInterval(0), storage.WithLogger(zap.New(core)))
	require.NoError(t, err)
	closed := false
	close = func() {
		if !closed {
			closed = true
			require.NoError(t, s.Close())
			require.NoError(t, d.Close())
		}
	}
	t.Cleanup(close)
	tp, err := s.Topic("t")
	if err != nil {
		tp, err = s.CreateTopic("t", 1, storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
		require.NoError(t, err)
	}
	return tp.Partitions[0], logs, close
}

func checkpointOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(path, "t-0", epochCheckpointName))
	require.NoError(t, err)
	return string(data)
}

// TestLeaderEpochCheckpoint: the cache is written as Kafka's
// leader-epoch-checkpoint on each change and read back on a restart; a
// torn tail cut by recovery takes its epochs with it, and a checkpoint
// that disagrees with the batches is rebuilt from them, with a warning.
func TestLeaderEpochCheckpoint(t *testing.T) {
	path := t.TempDir()
	p, _, closeFirst := epochStore(t, path)
	appendAt := func(p *storage.Partition, epoch int32, values ...string) {
		t.Helper()
		p.SetLeaderEpoch(epoch)
		_, err := p.Append(batchtest.Values(100, values...))
		require.NoError(t, err)
	}
	appendAt(p, 1, "a", "b") // 0-1
	appendAt(p, 3, "c")      // 2
	appendAt(p, 3, "d")      // 3
	assert.Equal(t, "0\n2\n1 0\n3 2\n", checkpointOf(t, path), "Kafka's format: version, count, entries")
	closeFirst()

	p, logs, closeSecond := epochStore(t, path)
	assert.Equal(t, []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}, p.LeaderEpochs())
	assert.Zero(t, logs.Len(), "the checkpoint agrees with the batches")
	closeSecond()

	// A crash tore the batches of epoch 3: recovery cuts them, and the
	// cache follows.
	crashed(t, path)
	seg := segmentOf(path, 0)
	require.NoError(t, os.Truncate(seg, int64(len(batchtest.Values(100, "a", "b"))+10)))
	p, logs, closeThird := epochStore(t, path)
	assert.Equal(t, int64(2), offsetsOf(t, p).LogEnd, "the torn tail is cut")
	assert.Equal(t, []storage.EpochEntry{{Epoch: 1, StartOffset: 0}}, p.LeaderEpochs(), "epoch 3's batches are gone")
	assert.Equal(t, "0\n1\n1 0\n", checkpointOf(t, path), "and so is its entry")
	assert.Zero(t, logs.Len(), "an entry past the log end is dropped as Kafka drops it: no warning")
	appendAt(p, 4, "e")
	closeThird()

	// A checkpoint that lies, or is not one, is rebuilt from the batches.
	for _, bad := range []string{"0\n1\n7 0\n", "garbage"} {
		require.NoError(t, os.WriteFile(filepath.Join(path, "t-0", epochCheckpointName), []byte(bad), 0o644))
		p, logs, closeAgain := epochStore(t, path)
		assert.Equal(t, []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: 2}}, p.LeaderEpochs(), "checkpoint %q", bad)
		assert.Equal(t, "0\n2\n1 0\n4 2\n", checkpointOf(t, path), "rewritten")
		assert.Equal(t, 1, logs.Len(), "a warning says so: %q", bad)
		closeAgain()
	}
}

func offsetsOf(t *testing.T, p *storage.Partition) storage.Offsets {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	return o
}

func TestEpochCheckpointFormat(t *testing.T) {
	entries := []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 5, StartOffset: 1234}}
	got, err := parseEpochCheckpoint(formatEpochCheckpoint(entries))
	require.NoError(t, err)
	assert.Equal(t, entries, got)
	got, err = parseEpochCheckpoint([]byte("0\n0\n"))
	require.NoError(t, err)
	assert.Empty(t, got)
	for _, bad := range []string{"", "1\n0\n", "0\n2\n1 0\n", "0\n1\n1\n", "0\n1\nx 0\n", "0\n-1\n"} {
		_, err := parseEpochCheckpoint([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}
