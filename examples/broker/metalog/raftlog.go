package metalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// away reports whether a voter is known to be away (fenced in the
	// image: shut down in a controlled way, or gone past its session):
	// failing to reach it is expected. By node id; may be nil.
	away  func(id int32) bool
	addrs map[string]int32 // the voters' raft addresses, to their node ids

	// unreachable tracks, by peer, since when raft has been failing to
	// reach it: the first raftUnreachableGrace of an episode is INFO (a
	// peer restarting, or stopping a moment before its fence is applied
	// here); an outage past it is logged at raft's level. Guarded by mu
	// (hclog writes from raft's goroutines).
	mu          *sync.Mutex
	unreachable map[int32]*unreachable
	now         func() time.Time
}

// unreachable is one peer's episode of failures.
type unreachable struct{ since, last time.Time }

// raftUnreachableGrace is how long failing to reach a peer is INFO: twice
// a quorum's usual election timeout. An episode ends after
// raftUnreachableQuiet without a failure (raft's retries back off to
// about 40 s between them).
const (
	raftUnreachableGrace = 2 * time.Second
	raftUnreachableQuiet = time.Minute
)

const (
	raftLogPeriod = 10 * time.Second
	raftLogFirst  = 2
)

func newRaftLogWriter(l *zap.Logger, closing *atomic.Bool, voters []Voter, away func(id int32) bool) raftLogWriter {
	addrs := make(map[string]int32, len(voters))
	for _, v := range voters {
		addrs[v.Addr] = v.ID
	}
	return raftLogWriter{log: l.WithOptions(zap.AddStacktrace(zapcore.FatalLevel), zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, raftLogPeriod, raftLogFirst, 0)
	})), closing: closing, away: away, addrs: addrs,
		mu: new(sync.Mutex), unreachable: make(map[int32]*unreachable), now: time.Now}
}

// fresh reports whether raft has been failing to reach peer id for less
// than raftUnreachableGrace, counting this failure.
func (w raftLogWriter) fresh(id int32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	u := w.unreachable[id]
	if u == nil || now.Sub(u.last) > raftUnreachableQuiet {
		u = &unreachable{since: now}
		w.unreachable[id] = u
	}
	u.last = now
	return now.Sub(u.since) < raftUnreachableGrace
}

// peerExpected reports whether the line is about a voter that failing to
// reach is expected for: one known to be away (fenced in the image), or
// one unreachable for less than raftUnreachableGrace. Raft names the voter
// by its id or its address, in "peer", "target" or "server-id".
func (w raftLogWriter) peerExpected(m map[string]any) bool {
	id, ok := w.peerOf(m)
	if !ok {
		return false
	}
	fresh := w.fresh(id)
	return fresh || (w.away != nil && w.away(id))
}

// peerOf returns the node id of the voter a line names.
func (w raftLogWriter) peerOf(m map[string]any) (int32, bool) {
	for _, k := range []string{"peer", "target", "server-id"} {
		switch v := m[k].(type) {
		case map[string]any: // a raft.Server: {"Address", "ID", "Suffrage"}
			if n, err := strconv.ParseInt(fmt.Sprint(v["ID"]), 10, 32); err == nil {
				return int32(n), true
			}
			if id, ok := w.addrs[fmt.Sprint(v["Address"])]; ok {
				return id, true
			}
		case string: // an address, or an id
			if id, ok := w.addrs[v]; ok {
				return id, true
			}
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				return int32(n), true
			}
		}
	}
	return 0, false
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
	if ce := w.log.Check(raftLevel(level, msg, errText, w.closing.Load() || w.peerExpected(m)), msg); ce != nil {
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
// level), and, with expected, for a line while this log closes, or about
// a peer known to be away, which then says only that.
func raftLevel(level, msg, errText string, expected bool) zapcore.Level {
	if expected || raftInfoLines[msg] {
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
