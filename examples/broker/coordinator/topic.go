package coordinator

// The state topics.
//
// Kafka keeps a coordinator's state in an internal topic (__consumer_offsets
// for groups, __transaction_state for transactions, __share_group_state
// for share groups), which it creates with its own partition count and
// replication factor (offsets.topic.num.partitions, 50, and
// offsets.topic.replication.factor, 3, for groups) the first time a client
// looks a coordinator up (or names the topic in a Metadata request that
// may auto-create). Clients see it: Metadata lists it with is_internal
// set, and a consumer subscribed by regular expression skips a topic for
// that flag; kgo logs it as skipped_internal.
//
// So does this broker: a state topic is a partitioned, replicated topic
// like any other, and each key (a group id) lives in one partition of it,
// PartitionFor (Kafka's abs(key.hashCode) % partitions, with Java's String
// hashCode), whose leader is the key's coordinator (load.go). Its
// replication factor is capped at the cluster's size (the brokers of
// --cluster, live or not): a broker alone gets one replica, a cluster of
// three gets three. Kafka does not cap it, and refuses to create the topic
// (COORDINATOR_NOT_AVAILABLE, until enough brokers are up) instead; a
// broker here places replicas on the brokers that --cluster names, whether
// they have registered yet or not, so there is nothing to wait for.
//
// A produce to an internal topic from a client is refused, as Kafka
// refuses one (INVALID_TOPIC_EXCEPTION, "Cannot append to internal
// topic"); the coordinator appends to it itself. Deleting it is allowed, as
// in Kafka: every key goes with it (its partitions are unloaded), and the
// next lookup creates it again, empty.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The names of Kafka's internal topics.
const (
	OffsetsTopic     = "__consumer_offsets"  // the group coordinator's
	TransactionTopic = "__transaction_state" // the transaction coordinator's
	ShareGroupTopic  = "__share_group_state" // the share coordinator's
)

// internalTopics are the names Kafka treats as internal, by name alone
// (its Topic.isInternal), whoever created them.
var internalTopics = map[string]bool{
	OffsetsTopic:     true,
	TransactionTopic: true,
	ShareGroupTopic:  true,
}

// IsInternal reports whether Kafka treats name as an internal topic: a
// client may not produce to it, and Metadata says so.
func IsInternal(name string) bool { return internalTopics[name] }

// TopicSpec is a state topic: how it is created, and how its partitions
// are kept.
type TopicSpec struct {
	Name              string
	Partitions        int32             // offsets.topic.num.partitions
	ReplicationFactor int16             // offsets.topic.replication.factor, capped at the cluster's size
	Configs           map[string]string // its own topic configs
	// MinInsyncReplicas is its min.insync.replicas
	// (transaction.state.log.min.isr for transactions), capped at its
	// replication factor (ReplicationFactor), so that a broker alone, or
	// a cluster smaller than the factor asked for, can append with
	// minISR; 0 leaves it to Configs or the broker's default.
	MinInsyncReplicas int16
	// AppendTimeout bounds an append's wait for its replication
	// (offsets.commit.timeout.ms): REQUEST_TIMED_OUT past it.
	AppendTimeout time.Duration
	// CompactionDeadRecords is how many dead records (overwritten or
	// deleted keys) a partition holds at least before its leader
	// rewrites the live ones and drops the rest, once they also
	// outnumber the live (offsets.topic.compaction.dead.records,
	// compaction.go).
	CompactionDeadRecords int64
}

// WithDefaults returns s with its zero Partitions, ReplicationFactor,
// MinInsyncReplicas and AppendTimeout taken from def, as a coordinator's
// service fills its settings; an error names a negative one.
func (s TopicSpec) WithDefaults(def TopicSpec) (TopicSpec, error) {
	if s.Partitions < 0 || s.ReplicationFactor < 0 || s.MinInsyncReplicas < 0 || s.AppendTimeout < 0 {
		return s, fmt.Errorf("%s: a negative partition count, replication factor, min.insync.replicas or append timeout: %d, %d, %d, %v",
			s.Name, s.Partitions, s.ReplicationFactor, s.MinInsyncReplicas, s.AppendTimeout)
	}
	s.Partitions = cmp.Or(s.Partitions, def.Partitions)
	s.ReplicationFactor = cmp.Or(s.ReplicationFactor, def.ReplicationFactor)
	s.MinInsyncReplicas = cmp.Or(s.MinInsyncReplicas, def.MinInsyncReplicas)
	s.AppendTimeout = cmp.Or(s.AppendTimeout, def.AppendTimeout)
	return s, nil
}

// Topic is a state topic the runtime hosts for one coordinator (a Shard):
// the partitions this broker leads and has loaded (load.go), and their
// compaction (compaction.go).
//
// Lock order: Topic.mu, then the shard's locks (a group's mutex), then a
// partition's compaction's mu (compaction.go), then the storage
// partition's own lock. Nothing under a shard's lock takes Topic.mu.
type Topic struct {
	rt    *Runtime
	spec  TopicSpec // immutable
	shard Shard     // immutable after Host

	owned atomic.Pointer[ownedPartitions] // the loaded partitions; never nil

	mu     sync.Mutex // guards the following; serializes loads and unloads
	topic  metadata.TopicID
	n      int                       // the topic's partitions
	states map[int32]*partitionState // the partitions this broker leads, by index
	wg     sync.WaitGroup            // the loads under way

	compactor *compactor
}

// Name returns the topic's name.
func (t *Topic) Name() string { return t.spec.Name }

// ReplicationFactor is the topic's replication factor: the spec's,
// capped at the cluster's size.
func (t *Topic) ReplicationFactor() int16 {
	return int16(min(int(t.spec.ReplicationFactor), t.rt.member.Brokers().Size()))
}

// Ensure creates the topic unless it exists, through the active
// controller (Config.CreateTopic: elsewhere, it is LEADER_NOT_AVAILABLE
// until the metadata log brings it). One created meanwhile by another
// request is fine.
func (t *Topic) Ensure() error {
	if _, err := t.rt.member.Image().Topic(t.spec.Name); err == nil {
		return nil
	}
	err := t.rt.cfg.CreateTopic(t.spec.Name, t.spec.Partitions, t.ReplicationFactor(), t.configs())
	switch {
	case errors.Is(err, metadata.ErrTopicExists), errors.Is(err, storage.ErrTopicExists):
		return nil
	case err == nil:
		t.rt.log.Info("created a state topic", zap.String("topic", t.spec.Name),
			zap.Int32("partitions", t.spec.Partitions), zap.Int16("replication_factor", t.ReplicationFactor()))
	case errors.Is(err, storage.ErrPartitionLimit), errors.Is(err, storage.ErrInvalidPartitions):
		// Its coordinator cannot work until this is fixed: said every
		// time, not once a minute as a client's refusal is.
		t.rt.log.Error("a state topic could not be created: its coordinator cannot serve", zap.String("topic", t.spec.Name),
			zap.Int32("partitions", t.spec.Partitions), zap.Error(err))
	}
	return err
}

// configs returns the topic's configs as it is created: the spec's, with
// its min.insync.replicas capped at the replication factor. Kafka does not
// cap it, and a transaction coordinator whose topic's ISR cannot reach it
// answers every write COORDINATOR_NOT_AVAILABLE; here the replication
// factor itself is capped at the cluster's size (see above), and so is
// this, in step.
func (t *Topic) configs() map[string]string {
	if t.spec.MinInsyncReplicas <= 0 {
		return t.spec.Configs
	}
	out := maps.Clone(t.spec.Configs)
	if out == nil {
		out = make(map[string]string, 1)
	}
	out["min.insync.replicas"] = strconv.Itoa(int(min(t.spec.MinInsyncReplicas, t.ReplicationFactor())))
	return out
}

// PartitionFor returns the partition of key among n: Kafka's
// Utils.abs(key.hashCode) % n, so that a group has the partition it would
// have in Kafka.
func PartitionFor(key string, n int) int32 {
	return int32(int(javaStringHash(key)&0x7fffffff) % n)
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over the UTF-16 code units of s, in int32 arithmetic that wraps. A rune
// outside the basic plane counts as its two surrogates, as in Java; an
// invalid UTF-8 byte as U+FFFD, as Kafka would have decoded it.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}
