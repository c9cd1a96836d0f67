package server

// The offsets topic.
//
// Kafka keeps its groups' commits in an internal topic, __consumer_offsets,
// which it creates with offsets.topic.num.partitions partitions the first
// time a client looks a group coordinator up (or names the topic in a
// Metadata request that may auto-create). Clients see it: Metadata lists it
// with is_internal set, and a consumer subscribed by regular expression
// skips a topic for that flag; kgo logs it as skipped_internal.
//
// Without log.dirs this broker keeps commits in its group coordinator's
// memory, not in a log (with them, in an offsets log of its own). It still creates the topic when Kafka would, so that clients see the
// cluster they expect, but its partitions stay empty: a produce to an
// internal topic is refused, as Kafka refuses one from a client
// (INVALID_TOPIC_EXCEPTION, "Cannot append to internal topic"), and a fetch
// from it reads nothing. Deleting it is allowed, as in Kafka; the next
// FindCoordinator creates it again, and no commit is lost, since none was
// in it.

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
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
func (s *Server) ensureOffsetsTopic(r *request) error {
	if _, err := s.image().Topic(offsetsTopic); err == nil {
		return nil
	}
	_, err := s.createTopicAtController(r, offsetsTopic, s.cfg.OffsetsTopicPartitions, 1)
	switch {
	case errors.Is(err, metadata.ErrTopicExists), errors.Is(err, storage.ErrTopicExists):
		return nil
	case err == nil:
		r.log().Info("created the offsets topic", zap.String("topic", offsetsTopic),
			zap.Int32("partitions", s.cfg.OffsetsTopicPartitions))
	}
	return err
}
