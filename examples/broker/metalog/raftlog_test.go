package metalog

import (
	"sync/atomic"
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
		Output: newRaftLogWriter(zap.New(core), new(atomic.Bool))})

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
	assert.Equal(t, zapcore.InfoLevel, last.Level, "every healthy start's first election: nothing wrong")
	assert.Equal(t, map[string]any{"last-leader-id": "3"}, last.ContextMap())
}

func TestRaftLogPassesOtherLinesWhole(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	w := newRaftLogWriter(zap.New(core), new(atomic.Bool))
	n, err := w.Write([]byte("not json\n"))
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	require.Len(t, logs.All(), 1)
	assert.Equal(t, "not json", logs.All()[0].Message)
}

// TestRaftLogSeverities: raft's lines are logged at the severity they have
// for an operator, and never with stack frames (a production logger adds
// them to errors): what says nothing is wrong (a healthy start's
// election, a leader stepping down, a peer's connection closing as it
// stops, anything while the log closes) is INFO; a real failure keeps
// raft's level.
func TestRaftLogSeverities(t *testing.T) {
	tests := []struct {
		name    string
		level   hclog.Level
		msg     string
		args    []any
		closing bool
		want    zapcore.Level
	}{
		{"a healthy start's election", hclog.Warn, "heartbeat timeout reached, starting election", nil, false, zapcore.InfoLevel},
		{"a leader stepping down", hclog.Error, "peer has newer term, stopping replication", []any{"peer", "3"}, false, zapcore.InfoLevel},
		{"a peer stopping", hclog.Error, "failed to decode incoming command", []any{"error", "read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"}, false, zapcore.InfoLevel},
		{"a peer gone", hclog.Error, "failed to decode incoming command", []any{"error", "EOF"}, false, zapcore.InfoLevel},
		{"a garbled command", hclog.Error, "failed to decode incoming command", []any{"error", "msgpack decode error"}, false, zapcore.ErrorLevel},
		{"a peer down", hclog.Error, "failed to heartbeat to", []any{"peer", "127.0.0.1:1"}, false, zapcore.ErrorLevel},
		{"a stale candidate's vote refused", hclog.Warn, "rejecting vote request since our last term is greater", nil, false, zapcore.InfoLevel},
		{"a failure to reach a peer", hclog.Warn, "failed to contact", []any{"server-id", "1"}, false, zapcore.WarnLevel},
		{"anything while closing", hclog.Error, "failed to heartbeat to", []any{"peer", "127.0.0.1:1"}, true, zapcore.InfoLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			closing := new(atomic.Bool)
			closing.Store(tt.closing)
			prod, err := zap.NewProduction() // adds stack frames to errors
			require.NoError(t, err)
			log := prod.WithOptions(zap.WrapCore(func(zapcore.Core) zapcore.Core { return core }))
			hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, JSONFormat: true,
				Output: newRaftLogWriter(log, closing)})
			hlog.Log(tt.level, tt.msg, tt.args...)
			require.Len(t, logs.All(), 1)
			e := logs.All()[0]
			assert.Equal(t, tt.want, e.Level)
			assert.Empty(t, e.Stack, "no stack frames")
		})
	}
}
