package storage

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TopicID is a topic's UUID (KIP-516): Metadata v10+, Fetch v13+ and
// Produce v13+ name topics by it. A topic deleted and created again under
// the same name gets a new id, so a client holding the old one notices.
type TopicID [16]byte

// String returns the id as Kafka prints it: unpadded URL-safe base64.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID reads an id as String prints it.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("storage: %q is not a topic id", s)
	}
	copy(id[:], b)
	return id, nil
}

// IsZero reports whether id is the zero UUID, which Kafka never assigns.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// newTopicID returns a random (version 4) UUID, never the zero one.
func newTopicID() TopicID {
	var id TopicID
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// A Topic is a named set of partitions. Its name, id and replication
// factor are fixed at creation; its config (Config) is the one thing that
// changes in place, for every generation at once (Store.AlterTopicConfig,
// configs.go). A Topic is otherwise immutable once the store publishes
// it, Partitions included, and is read without a lock: growing a topic
// (Store.AddPartitions) publishes a new Topic in its place, sharing the
// partitions it had and adding the new ones, and a holder of the old one
// goes on seeing the partitions it saw, as a reader of an image it loaded
// (see grow.go).
type Topic struct {
	Name string
	ID   TopicID
	// ReplicationFactor is how many brokers hold each partition, at
	// least 1. The storage keeps it for the server, which places the
	// replicas; it holds one of them.
	ReplicationFactor int16
	// Partitions are the topic's partitions, by index; never written
	// once the topic is published.
	Partitions []*Partition

	// life is what the generations of this topic share (grow.go); nil
	// in a Topic the store did not make.
	life *topicLife
}

// topicLife is what every generation of a topic shares: the lock that
// orders the changes the catalog records, its config, and whether it was
// deleted.
type topicLife struct {
	// alter serializes the topic's growths, config changes and its
	// deletion, each of which writes the catalog, then publishes. Taken
	// before Store.mu.
	alter   sync.Mutex
	deleted atomic.Bool
	// config is the topic's current config, never nil once the store
	// publishes the topic: replaced whole by AlterTopicConfig, never
	// written through (configs.go).
	config atomic.Pointer[TopicConfig]
}

// newTopicLife returns the shared state of a new topic with config cfg.
func newTopicLife(cfg TopicConfig) *topicLife {
	l := &topicLife{}
	l.config.Store(&cfg)
	return l
}

// Config returns the topic's configs as they are now: the same for every
// generation of the topic and every partition of it, and changed by
// Store.AlterTopicConfig between two calls, so a caller that needs two
// of its fields to agree reads it once. The zero TopicConfig for a Topic
// the store did not make. O(1), lock-free.
func (t *Topic) Config() TopicConfig {
	if t.life == nil {
		return TopicConfig{}
	}
	return *t.life.config.Load()
}

// Deleted reports whether the topic was deleted: true for every
// generation of it, the ones a growth replaced too.
func (t *Topic) Deleted() bool { return t.life != nil && t.life.deleted.Load() }

// Partition returns partition p of t, or an error wrapping
// ErrUnknownPartition.
func (t *Topic) Partition(p int32) (*Partition, error) {
	if p < 0 || int(p) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s has no partition %d", ErrUnknownPartition, t.Name, p)
	}
	return t.Partitions[p], nil
}

// maxTopicName is Kafka's limit on a topic name's length.
const maxTopicName = 249

// ValidateTopicName returns an error wrapping ErrInvalidTopic for a name
// Kafka refuses: empty, "." or "..", longer than 249 characters, or with a
// character other than ASCII letters, digits, '.', '_' and '-'.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > maxTopicName:
		return fmt.Errorf("%w: %d characters, at most %d are allowed", ErrInvalidTopic, len(name), maxTopicName)
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: %q has a character other than ASCII letters, digits, '.', '_' and '-'", ErrInvalidTopic, name)
		}
	}
	return nil
}

// TopicConfig holds the topic configs the storage enforces. A topic takes
// the store's defaults (the broker's log.* configs) and the overrides given
// when it is created.
type TopicConfig struct {
	// Retention is how long a batch is kept after its max timestamp
	// (retention.ms); negative keeps batches forever.
	Retention time.Duration
	// RetentionBytes bounds a partition's size (retention.bytes);
	// negative is unbounded.
	RetentionBytes int64
	// MaxMessageBytes bounds a batch's size (max.message.bytes).
	MaxMessageBytes int32
	// MinInsyncReplicas is how many in-sync replicas a produce with
	// acks=all needs (min.insync.replicas); zero means 1, Kafka's
	// default (see MinISR). The server enforces it.
	MinInsyncReplicas int32
	// UncleanLeaderElection lets a partition whose ISR has no live
	// replica be led by a live replica outside it, losing what it lacks
	// (unclean.leader.election.enable). The cluster's controller acts on
	// it; the storage only keeps it.
	UncleanLeaderElection bool

	// Cleanup is cleanup.policy: whether retention deletes old segments,
	// the log cleaner compacts the log by key, or both (cleaner.go).
	Cleanup CleanupPolicy
	// DirtyRatio is min.cleanable.dirty.ratio: the share of a log's
	// bytes not yet cleaned past which the cleaner takes it.
	DirtyRatio float64
	// MinCompactionLag is min.compaction.lag.ms: a record younger than
	// this is never compacted away (KIP-354), nor anything after it.
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms: a log whose oldest
	// record not yet cleaned is older than this is cleaned whatever its
	// dirty ratio; zero is unbounded, Kafka's default.
	MaxCompactionLag time.Duration
	// DeleteRetention is delete.retention.ms: how long a tombstone
	// stays after the cleaner first kept it, for consumers to see it.
	DeleteRetention time.Duration
	// SegmentBytes and SegmentMs are segment.bytes and segment.ms: a
	// durable log's segments roll at a topic's own from its next append
	// (setRollLocked); in memory every batch is a segment.
	SegmentBytes int32
	SegmentMs    time.Duration

	// LeaderThrottled and FollowerThrottled are
	// leader.replication.throttled.replicas and
	// follower.replication.throttled.replicas (throttled.go): the
	// replicas the brokers' replication quotas apply to.
	LeaderThrottled, FollowerThrottled ThrottledReplicas
}

// The names of the topic configs, as Kafka names them.
const (
	ConfigRetentionMs           = "retention.ms"
	ConfigRetentionBytes        = "retention.bytes"
	ConfigMaxMessageBytes       = "max.message.bytes"
	ConfigMinInsyncReplicas     = "min.insync.replicas"
	ConfigUncleanLeaderElection = "unclean.leader.election.enable"
)

// MinISR returns min.insync.replicas: MinInsyncReplicas, or 1 if it is
// not set (zero), so that a TopicConfig built without it means what
// Kafka's default means.
func (c TopicConfig) MinISR() int32 {
	if c.MinInsyncReplicas < 1 {
		return 1
	}
	return c.MinInsyncReplicas
}

// ConfigValue is one topic config, by name, as text.
type ConfigValue struct {
	Name, Value string
}

// Values lists c's configs by name.
func (c TopicConfig) Values() []ConfigValue {
	ms := int64(-1)
	if c.Retention >= 0 {
		ms = c.Retention.Milliseconds()
	}
	vs := []ConfigValue{
		{ConfigMaxMessageBytes, strconv.FormatInt(int64(c.MaxMessageBytes), 10)},
		{ConfigMinInsyncReplicas, strconv.FormatInt(int64(c.MinISR()), 10)},
		{ConfigRetentionBytes, strconv.FormatInt(c.RetentionBytes, 10)},
		{ConfigRetentionMs, strconv.FormatInt(ms, 10)},
		{ConfigUncleanLeaderElection, strconv.FormatBool(c.UncleanLeaderElection)},
	}
	vs = append(vs, c.cleanerValues()...)
	vs = append(vs, c.throttledValues()...)
	slices.SortFunc(vs, func(a, b ConfigValue) int { return strings.Compare(a.Name, b.Name) })
	return vs
}

// With returns c with the config name set to value; a nil value keeps the
// default, as Kafka treats a null config value. An unknown name, a config
// this broker does not enforce, or a value out of range is an error
// wrapping ErrInvalidConfig: a client asking for a config the broker does
// not have is told, rather than silently given a topic without it.
func (c TopicConfig) With(name string, value *string) (TopicConfig, error) {
	if next, known, err := c.withThrottled(name, value); known {
		return next, err
	}
	if value != nil {
		if next, known, err := c.withCleaner(name, *value); known {
			return next, err
		}
	} else if _, known, _ := c.withCleaner(name, ""); known {
		return c, nil
	}
	least := int64(-1) // -1: forever, unbounded
	switch name {
	case ConfigRetentionMs, ConfigRetentionBytes:
	case ConfigMaxMessageBytes:
		least = 0
	case ConfigMinInsyncReplicas:
		least = 1
	case ConfigUncleanLeaderElection:
		if value == nil {
			return c, nil
		}
		// A boolean as Kafka's ConfigDef parses one: true or false, in
		// any case.
		switch {
		case strings.EqualFold(*value, "true"):
			c.UncleanLeaderElection = true
		case strings.EqualFold(*value, "false"):
			c.UncleanLeaderElection = false
		default:
			return c, fmt.Errorf("%w: %s=%q is not true or false", ErrInvalidConfig, name, *value)
		}
		return c, nil
	default:
		return c, fmt.Errorf("%w: %s is not supported by this broker", ErrInvalidConfig, name)
	}
	if value == nil {
		return c, nil
	}
	v, err := strconv.ParseInt(*value, 10, 64)
	int32Config := name == ConfigMaxMessageBytes || name == ConfigMinInsyncReplicas
	if err != nil || v < least || (int32Config && v > math.MaxInt32) {
		return c, fmt.Errorf("%w: %s=%q is not an integer in range", ErrInvalidConfig, name, *value)
	}
	switch name {
	case ConfigRetentionMs:
		c.Retention = -1
		if v >= 0 {
			c.Retention = time.Duration(min(v, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
		}
	case ConfigRetentionBytes:
		c.RetentionBytes = v
	case ConfigMaxMessageBytes:
		c.MaxMessageBytes = int32(v)
	case ConfigMinInsyncReplicas:
		c.MinInsyncReplicas = int32(v)
	}
	return c, nil
}

// WithConfigs returns c with every config of configs set, as With sets
// one, in name order, so that a map with two bad values is refused for
// the same one each time: that error, wrapping ErrInvalidConfig, and c as
// it was. O(len(configs) log len(configs)).
func (c TopicConfig) WithConfigs(configs map[string]string) (TopicConfig, error) {
	next := c
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		v := configs[name]
		var err error
		if next, err = next.With(name, &v); err != nil {
			return c, err
		}
	}
	return next, nil
}
