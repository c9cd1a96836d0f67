package server

// The offsets topic.
//
// Kafka keeps its groups in an internal topic, __consumer_offsets, which
// it creates with offsets.topic.num.partitions partitions (50) and
// offsets.topic.replication.factor replicas (3) the first time a client
// looks a group coordinator up (or names the topic in a Metadata request
// that may auto-create). Clients see it: Metadata lists it with
// is_internal set, and a consumer subscribed by regular expression skips
// a topic for that flag; kgo logs it as skipped_internal.
//
// So does this broker: the topic is a partitioned, replicated topic like
// any other, and each group lives in one partition of it, partitionFor
// (Kafka's abs(groupId.hashCode) % partitions, with Java's String
// hashCode), whose leader is the group's coordinator (group_partitions.go).
// Its replication factor is capped at the cluster's size (the brokers of
// --cluster, live or not): a broker alone gets one replica, a cluster of
// three gets three. Kafka does not cap it, and refuses to create the topic
// (COORDINATOR_NOT_AVAILABLE, until enough brokers are up) instead; a
// broker here places replicas on the brokers that --cluster names, whether
// they have registered yet or not, so there is nothing to wait for.
//
// A produce to an internal topic from a client is refused, as Kafka
// refuses one (INVALID_TOPIC_EXCEPTION, "Cannot append to internal
// topic"); the coordinator appends to it itself. Deleting it is allowed, as
// in Kafka: every group goes with it (its partitions are unloaded), and
// the next FindCoordinator creates it again, empty.

import (
	"errors"
	"fmt"
	"unicode/utf16"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// offsetsTopic is the name of Kafka's offsets topic.
const offsetsTopic = "__consumer_offsets"

// internalTopics are the names Kafka treats as internal, by name alone
// (its Topic.isInternal), whoever created them.
var internalTopics = map[string]bool{
	offsetsTopic:          true,
	"__transaction_state": true,
	"__share_group_state": true,
}

// isInternalTopic reports whether Kafka treats name as an internal topic.
func isInternalTopic(name string) bool { return internalTopics[name] }

// internalTopicError is the error a produce to an internal topic gets:
// INVALID_TOPIC_EXCEPTION, with Kafka's message.
func internalTopicError(name string) error {
	return fmt.Errorf("%w: cannot append to internal topic %s", storage.ErrInvalidTopic, name)
}

// ensureOffsetsTopic creates the offsets topic unless it exists, through
// the active controller (see createTopicAtController: elsewhere, it is
// LEADER_NOT_AVAILABLE until the metadata log brings it). One created
// meanwhile by another request is fine.
func (s *Server) ensureOffsetsTopic(r *kafkanet.Request) error {
	if _, err := s.image().Topic(offsetsTopic); err == nil {
		return nil
	}
	_, err := s.createTopicAtController(r, offsetsTopic, s.cfg.OffsetsTopicPartitions, s.offsetsTopicRF(), offsetsTopicConfigs)
	switch {
	case errors.Is(err, metadata.ErrTopicExists), errors.Is(err, storage.ErrTopicExists):
		return nil
	case err == nil:
		r.Logger().Info("created the offsets topic", zap.String("topic", offsetsTopic),
			zap.Int32("partitions", s.cfg.OffsetsTopicPartitions), zap.Int16("replication_factor", s.offsetsTopicRF()))
	}
	return err
}

// offsetsTopicConfigs are the offsets topic's own configs: no retention,
// since a group's latest commit may be older than any retention and must
// still be there when a new leader loads the partition. Kafka compacts the
// topic by key instead (cleanup.policy compact); here the leader of each
// partition rewrites its live records and moves its log start past the
// dead ones (offsets_compaction.go), and followers follow that log start.
var offsetsTopicConfigs = map[string]string{"retention.ms": "-1", "retention.bytes": "-1"}

// offsetsTopicRF is offsets.topic.replication.factor, capped at the
// cluster's size.
func (s *Server) offsetsTopicRF() int16 {
	return int16(min(int(s.cfg.OffsetsTopicRF), s.brokers.Size()))
}

// partitionFor returns the offsets partition of group among n: Kafka's
// Utils.abs(groupId.hashCode) % n, so that a group has the partition it
// would have in Kafka.
func partitionFor(group string, n int) int32 {
	return int32(int(javaStringHash(group)&0x7fffffff) % n)
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
