package metalog

import (
	"sync/atomic"
	"testing"
	"time"

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
		Output: newRaftLogWriter(zap.New(core), new(atomic.Bool), nil, nil)})

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
	w := newRaftLogWriter(zap.New(core), new(atomic.Bool), nil, nil)
	n, err := w.Write([]byte("not json\n"))
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	require.Len(t, logs.All(), 1)
	assert.Equal(t, "not json", logs.All()[0].Message)
}

// TestRaftLogSeverities: raft's lines are logged at the severity they have
// for an operator, and never with stack frames (a production logger adds
// them to errors): what says nothing is wrong (a healthy start's
// election, a leader stepping down, a stale vote refused, a peer's
// connection closing as it stops, a peer unreachable for under
// raftUnreachableGrace or fenced, anything while the log closes) is INFO;
// a real failure keeps raft's level. Each case logs its line twice, the
// second raftUnreachableGrace and a bit after the first: "first" is the
// first line's level, "then" the second's.
func TestRaftLogSeverities(t *testing.T) {
	const info, warn, errL = zapcore.InfoLevel, zapcore.WarnLevel, zapcore.ErrorLevel
	live := map[string]any{"Address": "127.0.0.1:1", "ID": "1"}
	fenced := map[string]any{"Address": "127.0.0.1:2", "ID": "2"}
	tests := []struct {
		name        string
		level       hclog.Level
		msg         string
		args        []any
		closing     bool
		first, then zapcore.Level
	}{
		{"a healthy start's election", hclog.Warn, "heartbeat timeout reached, starting election", nil, false, info, info},
		{"a leader stepping down", hclog.Error, "peer has newer term, stopping replication", []any{"peer", "3"}, false, info, info},
		{"a stale candidate's vote refused", hclog.Warn, "rejecting vote request since our last term is greater", nil, false, info, info},
		{"a peer's connection closing", hclog.Error, "failed to decode incoming command", []any{"error", "read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"}, false, info, info},
		{"a garbled command", hclog.Error, "failed to decode incoming command", []any{"error", "msgpack decode error"}, false, errL, errL},
		{"a peer down, by address", hclog.Error, "failed to heartbeat to", []any{"peer", "127.0.0.1:1"}, false, info, errL},
		{"a peer down, by id", hclog.Error, "failed to appendEntries to", []any{"peer", live}, false, info, errL},
		{"a peer not contacted", hclog.Warn, "failed to contact", []any{"server-id", "1"}, false, info, warn},
		{"a fenced peer", hclog.Error, "failed to heartbeat to", []any{"peer", "127.0.0.1:2"}, false, info, info},
		{"a fenced peer's vote", hclog.Error, "failed to make requestVote RPC", []any{"target", fenced}, false, info, info},
		{"anything while closing", hclog.Error, "failed to heartbeat to", []any{"peer", "127.0.0.1:1"}, true, info, info},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			closing := new(atomic.Bool)
			closing.Store(tt.closing)
			prod, err := zap.NewProduction() // adds stack frames to errors
			require.NoError(t, err)
			log := prod.WithOptions(zap.WrapCore(func(zapcore.Core) zapcore.Core { return core }))
			w := newRaftLogWriter(log, closing, []Voter{{ID: 1, Addr: "127.0.0.1:1"}, {ID: 2, Addr: "127.0.0.1:2"}},
				func(id int32) bool { return id == 2 })
			now := time.Unix(1000, 0)
			w.now = func() time.Time { return now }
			hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, JSONFormat: true, Output: w})
			hlog.Log(tt.level, tt.msg, tt.args...)
			now = now.Add(raftUnreachableGrace + time.Millisecond)
			hlog.Log(tt.level, tt.msg, tt.args...)
			require.Len(t, logs.All(), 2)
			assert.Equal(t, tt.first, logs.All()[0].Level, "the first line")
			assert.Equal(t, tt.then, logs.All()[1].Level, "the second")
			for _, e := range logs.All() {
				assert.Empty(t, e.Stack, "no stack frames")
			}
		})
	}
}

// TestRaftLogUnreachableEpisodes: failing to reach a peer is INFO for
// raftUnreachableGrace, then raft's level while it goes on; after
// raftUnreachableQuiet without a failure, a new one starts a new episode,
// INFO again at first.
func TestRaftLogUnreachableEpisodes(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	w := newRaftLogWriter(zap.New(core), new(atomic.Bool), []Voter{{ID: 1, Addr: "127.0.0.1:1"}}, nil)
	now := time.Unix(1000, 0)
	w.now = func() time.Time { return now }
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, JSONFormat: true, Output: w})
	// Messages vary, so that the sampler (two a message per period) keeps
	// every line: the episode is the peer's, whatever raft failed at.
	msgs := []string{"failed to heartbeat to", "failed to appendEntries to", "failed to heartbeat to",
		"failed to appendEntries to", "failed to install snapshot"}
	for i, step := range []time.Duration{0, time.Second, time.Second + time.Millisecond, 40 * time.Second, 2 * time.Minute} {
		now = now.Add(step)
		hlog.Error(msgs[i], "peer", "127.0.0.1:1")
	}
	var levels []zapcore.Level
	for _, e := range logs.All() {
		levels = append(levels, e.Level)
	}
	assert.Equal(t, []zapcore.Level{zapcore.InfoLevel, zapcore.InfoLevel, zapcore.ErrorLevel, zapcore.ErrorLevel, zapcore.InfoLevel}, levels)
}
