package metalog

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Raft's lines reach zap as structured entries, and a failure repeated
// while a peer is down is logged raftLogFirst times per period, not at
// every retry.
func TestRaftLogIsStructuredAndSampled(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, JSONFormat: true,
		Output: newRaftLogWriter(zap.New(core))})

	for range 50 {
		hlog.Error("failed to heartbeat to", "peer", "127.0.0.1:1", "backoff time", "10ms")
	}
	hlog.Warn("heartbeat timeout reached, starting election", "last-leader-id", "3")
	hlog.Info("not logged: below warn")

	entries := logs.All()
	require.Len(t, entries, raftLogFirst+1)
	first := entries[0]
	assert.Equal(t, "failed to heartbeat to", first.Message)
	assert.Equal(t, zapcore.ErrorLevel, first.Level)
	assert.Equal(t, map[string]any{"peer": "127.0.0.1:1", "backoff time": "10ms"}, first.ContextMap())
	last := entries[raftLogFirst]
	assert.Equal(t, "heartbeat timeout reached, starting election", last.Message)
	assert.Equal(t, zapcore.WarnLevel, last.Level)
	assert.Equal(t, map[string]any{"last-leader-id": "3"}, last.ContextMap())
}

func TestRaftLogPassesOtherLinesWhole(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	w := newRaftLogWriter(zap.New(core))
	n, err := w.Write([]byte("not json\n"))
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	require.Len(t, logs.All(), 1)
	assert.Equal(t, "not json", logs.All()[0].Message)
}
