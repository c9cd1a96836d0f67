package server

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

func TestLogConfigs(t *testing.T) {
	cfg := Default()
	assert.Empty(t, cfg.LogDirs, "in memory by default")
	assert.Equal(t, int64(math.MaxInt64), cfg.LogFlushIntervalMessages, "Kafka's default: never")
	assert.Equal(t, time.Duration(-1), cfg.LogFlushInterval)
	props := "log.dirs=/var/lib/broker\nlog.segment.bytes=1048576\nlog.roll.ms=3600000\n" +
		"log.index.interval.bytes=512\nlog.flush.interval.messages=1\nlog.flush.interval.ms=1000\n"
	require.NoError(t, cfg.LoadProperties(strings.NewReader(props)))
	assert.Equal(t, "/var/lib/broker", cfg.LogDirs)
	assert.Equal(t, int64(1<<20), cfg.LogSegmentBytes)
	assert.Equal(t, time.Hour, cfg.LogRoll)
	assert.Equal(t, int64(512), cfg.LogIndexIntervalBytes)
	assert.Equal(t, int64(1), cfg.LogFlushIntervalMessages)
	assert.Equal(t, time.Second, cfg.LogFlushInterval)
	require.NoError(t, cfg.validate())
	cfg.LogDirs = "/a,/b"
	assert.ErrorContains(t, cfg.validate(), "one directory")
}

func durableTestConfig(dir string) Config {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	cfg.LogDirs = dir
	return cfg
}

// TestOneBrokerPerLogDir: a second broker on a log dir in use fails to
// start, and leaves nothing running.
func TestOneBrokerPerLogDir(t *testing.T) {
	dir := t.TempDir()
	newTestServer(t, func(c *Config) { c.LogDirs = dir })
	_, err := New(durableTestConfig(dir), nil)
	assert.ErrorIs(t, err, logdir.ErrLocked)
}

// TestCorruptLogDirRefusesToStart: a partition that cannot be recovered
// stops the broker from starting, with the file named, rather than serve
// without its data.
func TestCorruptLogDirRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	s, err := New(durableTestConfig(dir), nil)
	require.NoError(t, err)
	createTopic(t, s, "t", 1)
	require.NoError(t, s.Close(context.Background()))

	seg := filepath.Join(dir, "t-0", "00000000000000000000.log")
	require.NoError(t, os.Remove(seg))
	_, err = New(durableTestConfig(dir), nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, "t-0")

	require.NoError(t, os.WriteFile(seg, []byte("not a batch, followed by nothing of the kind"), 0o644))
	s, err = New(durableTestConfig(dir), nil)
	require.NoError(t, err, "garbage alone in the active segment is a torn tail")
	p, err := s.data.store.Partition("t", 0)
	require.NoError(t, err)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, storage.Offsets{}, o)
	require.NoError(t, s.Close(context.Background()))
}
