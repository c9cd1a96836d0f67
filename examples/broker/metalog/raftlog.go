package metalog

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// raftLogWriter passes hashicorp/raft's log lines, which hclog writes as
// JSON (WARN and ERROR only), to zap as structured entries: the message
// as the message, every other field (peer, error, term...) as a field.
//
// While a voter is down, raft logs the same failures (failed to heartbeat
// to, failed to appendEntries to, failed to make requestVote RPC) every
// few tens of milliseconds per peer; the writer's logger samples them,
// keeping the first raftLogFirst entries of each message per
// raftLogPeriod and dropping the rest, so an outage is a few lines, not
// thousands.
type raftLogWriter struct{ log *zap.Logger }

const (
	raftLogPeriod = 10 * time.Second
	raftLogFirst  = 2
)

func newRaftLogWriter(l *zap.Logger) raftLogWriter {
	return raftLogWriter{l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, raftLogPeriod, raftLogFirst, 0)
	}))}
}

// Write logs one of hclog's lines: a JSON object with @level, @message,
// @module, @timestamp and the entry's own fields. A line that is not one
// is logged whole.
func (w raftLogWriter) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		w.log.Warn(string(trimNewline(p)))
		return len(p), nil
	}
	msg, _ := m["@message"].(string)
	level, _ := m["@level"].(string)
	fields := make([]zap.Field, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(k) > 0 && k[0] == '@' {
			continue
		}
		fields = append(fields, zap.Any(k, m[k]))
	}
	if level == "error" {
		w.log.Error(msg, fields...)
	} else {
		w.log.Warn(msg, fields...)
	}
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
