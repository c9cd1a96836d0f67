package storage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The topic configs of log compaction (cleaner.go), as Kafka names them.
//
// A TopicConfig's zero value means Kafka's default wherever Kafka's
// default can be a zero: cleanup.policy delete, min.compaction.lag.ms 0,
// max.compaction.lag.ms unbounded (zero here: Kafka's smallest is 1).
// min.cleanable.dirty.ratio (0.5), delete.retention.ms (a day),
// segment.bytes (1 GiB) and segment.ms (7 days) have defaults that are
// not zeros: DefaultTopicConfig holds them, and a store's topics start
// from it unless WithTopicDefaults says otherwise. A zero segment.bytes
// or segment.ms is unset, and reads back as zero: the log's own.
const (
	ConfigCleanupPolicy     = "cleanup.policy"
	ConfigDirtyRatio        = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLag  = "min.compaction.lag.ms"
	ConfigMaxCompactionLag  = "max.compaction.lag.ms"
	ConfigDeleteRetentionMs = "delete.retention.ms"
	ConfigSegmentBytes      = "segment.bytes"
	ConfigSegmentMs         = "segment.ms"
)

// CleanupPolicy is a topic's cleanup.policy: which of retention and
// compaction apply to it.
type CleanupPolicy uint8

const (
	// CleanupDelete deletes old segments by retention.ms and
	// retention.bytes (Kafka's default); the zero value.
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact keeps each key's latest value, whatever its age.
	CleanupCompact
	// CleanupCompactDelete does both: compacts, and deletes old
	// segments as retention says.
	CleanupCompactDelete
)

// Compacts reports whether the log cleaner compacts the topic.
func (p CleanupPolicy) Compacts() bool { return p != CleanupDelete }

// Deletes reports whether retention deletes the topic's old segments.
func (p CleanupPolicy) Deletes() bool { return p != CleanupCompact }

// String returns the policy as Kafka's cleanup.policy lists it.
func (p CleanupPolicy) String() string {
	switch p {
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	default:
		return "delete"
	}
}

// parseCleanupPolicy reads a cleanup.policy list, as Kafka's ConfigDef
// reads one: comma-separated, spaces around items ignored, each item
// "delete" or "compact", in any order.
func parseCleanupPolicy(s string) (CleanupPolicy, bool) {
	var compact, del bool
	for _, item := range strings.Split(s, ",") {
		switch strings.TrimSpace(item) {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return 0, false
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, true
	case compact:
		return CleanupCompact, true
	default:
		return CleanupDelete, true
	}
}

// DefaultTopicConfig returns Kafka's defaults for the topic configs the
// storage knows: what a store's topics start from unless
// WithTopicDefaults sets others.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		Retention:         7 * 24 * time.Hour, // log.retention.hours=168
		RetentionBytes:    -1,
		MaxMessageBytes:   1048588, // message.max.bytes
		MinInsyncReplicas: 1,       // min.insync.replicas
		DirtyRatio:        0.5,
		DeleteRetention:   24 * time.Hour,
		SegmentBytes:      1 << 30,
		SegmentMs:         7 * 24 * time.Hour,
	}
}

// cleanerValues lists the compaction configs of c, by name.
func (c TopicConfig) cleanerValues() []ConfigValue {
	return []ConfigValue{
		{ConfigCleanupPolicy, c.Cleanup.String()},
		{ConfigDeleteRetentionMs, strconv.FormatInt(c.DeleteRetention.Milliseconds(), 10)},
		{ConfigMaxCompactionLag, strconv.FormatInt(maxLagMs(c.MaxCompactionLag), 10)},
		{ConfigDirtyRatio, strconv.FormatFloat(c.DirtyRatio, 'g', -1, 64)},
		{ConfigMinCompactionLag, strconv.FormatInt(c.MinCompactionLag.Milliseconds(), 10)},
		{ConfigSegmentBytes, strconv.FormatInt(int64(c.SegmentBytes), 10)},
		{ConfigSegmentMs, strconv.FormatInt(c.SegmentMs.Milliseconds(), 10)},
	}
}

// maxLagMs is max.compaction.lag.ms as Kafka prints it: Long.MAX_VALUE
// when unbounded (zero here).
func maxLagMs(d time.Duration) int64 {
	if d <= 0 {
		return math.MaxInt64
	}
	return d.Milliseconds()
}

// msDuration returns v milliseconds as a Duration, saturated where a
// Duration ends (292 years).
func msDuration(v int64) time.Duration {
	return time.Duration(min(v, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

// withCleaner is With for the compaction configs; known is false for a
// name that is not one of them. value is not nil.
func (c TopicConfig) withCleaner(name, value string) (next TopicConfig, known bool, err error) {
	bad := func(why string) (TopicConfig, bool, error) {
		return c, true, fmt.Errorf("%w: %s=%q %s", ErrInvalidConfig, name, value, why)
	}
	integer := func(least, most int64) (int64, bool) {
		v, err := strconv.ParseInt(value, 10, 64)
		return v, err == nil && v >= least && v <= most
	}
	switch name {
	case ConfigCleanupPolicy:
		p, ok := parseCleanupPolicy(value)
		if !ok {
			return bad("is not a list of delete and compact")
		}
		c.Cleanup = p
	case ConfigDirtyRatio:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return bad("is not a number between 0 and 1")
		}
		c.DirtyRatio = v
	case ConfigMinCompactionLag, ConfigDeleteRetentionMs:
		v, ok := integer(0, math.MaxInt64)
		if !ok {
			return bad("is not an integer of at least 0")
		}
		if name == ConfigMinCompactionLag {
			c.MinCompactionLag = msDuration(v)
		} else {
			c.DeleteRetention = msDuration(v)
		}
	case ConfigMaxCompactionLag:
		v, ok := integer(1, math.MaxInt64)
		if !ok {
			return bad("is not an integer of at least 1")
		}
		c.MaxCompactionLag = 0 // unbounded
		if v < math.MaxInt64/int64(time.Millisecond) {
			c.MaxCompactionLag = msDuration(v)
		}
	case ConfigSegmentBytes:
		// Kafka's smallest is 1 MiB (14 bytes before 4.0); a test's
		// 200 bytes is taken, as Kafka 3 took it, down to a header. Zero
		// is a TopicConfig's unset value, read back as it was written.
		v, ok := integer(BatchHeaderSize, math.MaxInt32)
		if !ok && value != "0" {
			return bad(fmt.Sprintf("is not an integer between %d and %d", BatchHeaderSize, math.MaxInt32))
		}
		c.SegmentBytes = int32(v)
	case ConfigSegmentMs:
		v, ok := integer(0, math.MaxInt64)
		if !ok {
			return bad("is not an integer of at least 1")
		}
		c.SegmentMs = msDuration(v)
	default:
		return c, false, nil
	}
	return c, true, nil
}

// segmentRoll is a topic's own segment.bytes and segment.ms, as a log that
// rolls by them (SegmentRoller) was told: zero for the log's own.
type segmentRoll struct {
	bytes int64
	age   time.Duration
}

// setRollLocked tells the partition's log, if it rolls by them, the
// topic's segment.bytes and segment.ms (or max.compaction.lag.ms, if
// shorter, for a compacted topic) when they changed since it was last
// told. Only a topic's own values are told: one equal to the store's
// default leaves the log's own (the broker's log.segment.bytes and
// log.roll.ms, which the server makes the defaults, or the size logdir
// gives an internal topic). O(1), and nothing to do but on a change.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) setRollLocked() {
	r, ok := p.log.(SegmentRoller)
	if !ok {
		return
	}
	c, def := p.topic.Config(), p.cfg.defaults
	var want segmentRoll
	if c.SegmentBytes != 0 && c.SegmentBytes != def.SegmentBytes {
		want.bytes = int64(c.SegmentBytes)
	}
	if c.SegmentMs != 0 && c.SegmentMs != def.SegmentMs {
		want.age = c.SegmentMs
	}
	// KIP-354: a compacted topic's active segment rolls by
	// max.compaction.lag.ms too, so that no record waits longer than
	// that to be cleanable (the cleaner never cleans the active one).
	if lag := c.MaxCompactionLag; c.Cleanup.Compacts() && lag > 0 && (want.age == 0 && lag < c.SegmentMs || want.age > lag) {
		want.age = lag
	}
	if want != p.roll {
		p.roll = want
		r.SetSegmentRoll(want.bytes, want.age)
	}
}
