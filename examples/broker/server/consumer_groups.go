package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/service"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// This file wires the KIP-848 consumer group coordinator (package
// consumergroup) to the broker; the API files 68 and 69 serve it, and the
// classic group APIs that name a group (08, 09, 11, 15, 16, 42) ask it
// first whether the group is a consumer group. Its groups are routed as
// the classic ones are, to the leader of their offsets partition, kept in
// that partition's records (group/service's ConsumerStore), loaded from
// them when this broker comes to lead it, and forgotten when it is
// unloaded here.

// newConsumerGroups builds the consumer group coordinator from the
// broker's configs, reading the topics from the metadata image.
func (s *Server) newConsumerGroups(cfg Config, log *zap.Logger) (*consumergroup.Coordinator, error) {
	return consumergroup.New(
		consumergroup.WithLogger(log.Named("consumergroup")),
		consumergroup.WithSessionTimeout(cfg.GroupConsumerSessionTimeout),
		consumergroup.WithHeartbeatInterval(cfg.GroupConsumerHeartbeatInterval),
		consumergroup.WithAssignors(cfg.GroupConsumerAssignors...),
		consumergroup.WithMaxSize(cfg.GroupConsumerMaxSize),
		consumergroup.WithTopics(func() consumergroup.Topics { return imageTopics{s.image()} }),
		// s.offsets is set once the classic coordinator is hosted,
		// before the metadata log opens, so before any request.
		consumergroup.WithOwner(func(group string) bool { return s.offsets.Owns(group) }),
		consumergroup.WithOnEmpty(s.consumerGroupEmptied),
		// A group whose last consumer-protocol member timed out goes
		// back to the classic protocol (68_consumer_group_heartbeat.go).
		consumergroup.WithOnClassicOnly(func(id string) {
			defer s.groupTypes.lock(id)()
			s.downgradeConsumerGroupLocked(id)
		}),
		// Its groups' records go to their offsets partitions, as the
		// classic coordinator's (s.offsets, set likewise).
		consumergroup.WithStore(service.ConsumerStore(func() *coordinator.Topic { return s.offsets })),
	)
}

// consumerGroupEmptied follows a consumer group's last member out: its
// offsets, which the classic coordinator keeps, start expiring
// (group.Coordinator.Release: offsets.retention.minutes after each
// commit, as Kafka's consumer groups' do once they no longer subscribe to
// the topic), and a group without offsets is deleted, gone from
// ListGroups and ConsumerGroupDescribe, as Kafka deletes an Empty
// consumer group whose offsets are gone (at its next
// offsets.retention.check.interval.ms there; here at once). A group with
// offsets goes when they expire (group.WithOnExpired, groups.go). Delete
// keeps a group a member joined again meanwhile.
func (s *Server) consumerGroupEmptied(id string) {
	if !s.groups.Release(id) {
		_ = s.consumers.Delete([]string{id})
	}
}

// memberCode is a committed partition's error code: code, the
// partition's own (authorization, existence), else the consumer group
// member's, refused for the whole commit or check's for the partition
// (ValidateCommit; nil: none).
func memberCode(code int16, refused *kerr.Error, check consumergroup.PartitionCheck, topic string, partition int32) int16 {
	switch {
	case code != 0:
		return code
	case refused != nil:
		return refused.Code
	case check != nil:
		return group.Code(check(topic, partition))
	}
	return 0
}

// knownAssignors reports whether names is a non-empty list of assignors
// the consumer group coordinator knows.
func knownAssignors(names []string) bool {
	known := consumergroup.Assignors()
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return known[n] == nil })
}

// imageTopics is a metadata image as the consumer group coordinator reads
// it: its version is the image's log index, which every topic change
// moves.
type imageTopics struct{ im *metadata.Image }

func (t imageTopics) Version() uint64 { return t.im.Index }

func (t imageTopics) Topic(name string) (consumergroup.TopicMeta, bool) {
	tp, err := t.im.Topic(name)
	if err != nil {
		return consumergroup.TopicMeta{}, false
	}
	return topicMeta(tp), true
}

func (t imageTopics) ByID(id consumergroup.TopicID) (consumergroup.TopicMeta, bool) {
	tp, err := t.im.TopicByID(metadata.TopicID(id))
	if err != nil {
		return consumergroup.TopicMeta{}, false
	}
	return topicMeta(tp), true
}

func (t imageTopics) Names() []string {
	ts := t.im.Topics()
	out := make([]string, len(ts))
	for i, tp := range ts {
		out[i] = tp.Name
	}
	return out
}

func topicMeta(t *metadata.Topic) consumergroup.TopicMeta {
	return consumergroup.TopicMeta{Name: t.Name, ID: consumergroup.TopicID(t.ID), Partitions: int32(len(t.Partitions))}
}
