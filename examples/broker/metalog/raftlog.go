package metalog

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// raftLogWriter passes hashicorp/raft's log lines, which hclog writes as
// JSON (WARN and ERROR only), to zap as structured entries: the message
// as the message, every other field (peer, error, term...) as a field,
// without stack frames (they show the logging library's frames, not the
// cause), at the severity the event has for an operator (raftLevel).
//
// While a voter is down, raft logs the same failures (failed to heartbeat
// to, failed to appendEntries to, failed to make requestVote RPC) every
// few tens of milliseconds per peer; the writer's logger samples them,
// keeping the first raftLogFirst entries of each message per
// raftLogPeriod and dropping the rest, so an outage is a few lines, not
// thousands.
type raftLogWriter struct {
	log     *zap.Logger
	closing *atomic.Bool // the log is closing: what raft says of it is expected
}

const (
	raftLogPeriod = 10 * time.Second
	raftLogFirst  = 2
)

func newRaftLogWriter(l *zap.Logger, closing *atomic.Bool) raftLogWriter {
	return raftLogWriter{log: l.WithOptions(zap.AddStacktrace(zapcore.FatalLevel), zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, raftLogPeriod, raftLogFirst, 0)
	})), closing: closing}
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
	errText, _ := m["error"].(string)
	fields := make([]zap.Field, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(k) > 0 && k[0] == '@' {
			continue
		}
		fields = append(fields, zap.Any(k, m[k]))
	}
	if ce := w.log.Check(raftLevel(level, msg, errText, w.closing.Load()), msg); ce != nil {
		ce.Write(fields...)
	}
	return len(p), nil
}

// raftInfoLines are lines raft logs at WARN or ERROR that say nothing is
// wrong: a voter starting its first election (every healthy start), a
// leader stepping down for a voter with a newer term (every leadership
// change, the controlled shutdown's transfer among them), and, by their
// prefix (raftInfoPrefixes), a voter refusing a stale candidate's vote,
// which is how elections work.
var raftInfoLines = map[string]bool{
	"heartbeat timeout reached, starting election": true,
	"peer has newer term, stopping replication":    true,
}

var raftInfoPrefixes = []string{"rejecting vote request since", "rejecting pre-vote request since"}

// raftGoneErrors are the errors of a connection whose other end went:
// a peer stopping, or this broker.
var raftGoneErrors = []string{"EOF", "use of closed network connection", "connection reset by peer", "broken pipe"}

// raftLevel returns the level a raft line of hclog's level is logged at:
// raft's own (WARN, ERROR), but INFO for a line that says nothing is wrong
// (raftInfoLines), for a connection closed by a peer that stops (a peer
// that stays away shows in the failed heartbeats that follow, at raft's
// level), and for every line while this log closes, which then says only
// that it closes.
func raftLevel(level, msg, errText string, closing bool) zapcore.Level {
	if closing || raftInfoLines[msg] {
		return zapcore.InfoLevel
	}
	for _, prefix := range raftInfoPrefixes {
		if strings.HasPrefix(msg, prefix) {
			return zapcore.InfoLevel
		}
	}
	if msg == "failed to decode incoming command" {
		for _, gone := range raftGoneErrors {
			if strings.Contains(errText, gone) {
				return zapcore.InfoLevel
			}
		}
	}
	if level == "error" {
		return zapcore.ErrorLevel
	}
	return zapcore.WarnLevel
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
