package server

import (
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/service"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// This file wires the group coordinator (package group) to the broker, on
// the coordinator runtime (package group/service); the API files 08, 09,
// 10-16, 28, 42 and 47 translate its requests and answers.

// offsetsTopic is the name of Kafka's offsets topic, the group
// coordinator's state topic.
const offsetsTopic = coordinator.OffsetsTopic

// newGroupCoordinator builds the group coordinator from the broker's
// configs, with its purgatories' metrics on the broker's registry, hosted
// by rt on the offsets topic, which it returns too. The consumer groups of
// a partition loaded are loaded before its classic groups, those of a
// partition unloaded forgotten with them; shares likewise for the share
// groups, once it returns them (the share broker is built after the
// group coordinator, before the metadata log opens and so before any
// partition is loaded).
func newGroupCoordinator(rt *coordinator.Runtime, cfg Config, log *zap.Logger, reg prometheus.Registerer,
	consumers *consumergroup.Coordinator, shares func() *sharegroup.Coordinator) (*group.Coordinator, *coordinator.Topic, error) {
	return service.New(rt, service.Config{
		Partitions: cfg.OffsetsTopicPartitions, ReplicationFactor: cfg.OffsetsTopicRF,
		CommitTimeout: cfg.OffsetsCommitTimeout, CompactionDeadRecords: cfg.OffsetsCompactionDeadRecords,
		OnUnload: func(inPartition func(string) bool) {
			consumers.Unload(inPartition)
			shares().Unload(inPartition)
		},
		OnLoad: func(groups []consumergroup.StoredGroup) {
			if _, err := consumers.Load(groups); err != nil {
				log.Warn("loading consumer groups", zap.Error(err))
			}
		},
		OnLoadShares: func(groups []sharegroup.StoredGroup) { shares().Load(groups) },
	},
		group.WithLogger(log.Named("group")),
		group.WithRegisterer(reg),
		group.WithInitialRebalanceDelay(cfg.GroupInitialRebalance),
		group.WithSessionTimeouts(cfg.GroupMinSessionTimeout, cfg.GroupMaxSessionTimeout),
		group.WithMaxSize(cfg.GroupMaxSize),
		group.WithOffsetsRetention(cfg.OffsetsRetention),
		group.WithSubscriptions(consumerSubscription),
		// A consumer group's offsets are kept here, in an Empty
		// group of its id: they expire only while it has no members,
		// and the consumer group goes when they have (consumer_groups.go).
		group.WithHeld(consumers.HasMembers),
		group.WithOnExpired(func(id string) { _ = consumers.Delete([]string{id}) }),
	)
}

// createStateTopic creates a coordinator's state topic for the runtime
// (coordinator.Config.CreateTopic), as a Metadata request auto-creates a
// topic: through this broker's controller if it is the active one, else
// by asking it.
func (s *Server) createStateTopic(name string, partitions int32, rf int16, configs map[string]string) error {
	_, err := s.createTopicAtController(name, partitions, rf, configs)
	return err
}

// consumerSubscription reads the topics of a "consumer" protocol member's
// metadata (Kafka's ConsumerProtocol subscription), for OffsetDelete.
func consumerSubscription(metadata []byte) ([]string, error) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(metadata); err != nil {
		return nil, err
	}
	return m.Topics, nil
}

// partitionExists reports whether a partition exists, as Kafka's KafkaApis
// checks its metadata cache before handing commits to the coordinator: an
// offset commit to one that does not is answered
// UNKNOWN_TOPIC_OR_PARTITION. It asks Server.topicExists, which New sets
// to look in the metadata log's image.
func (s *Server) partitionExists(topic string, partition int32) bool {
	return s.topicExists == nil || s.topicExists(topic, partition)
}

// partitionCode is the error code of a partition an offset request
// names, before its coordinator is asked: denied, the topic's
// authorization code (authz.go), first, so that an unauthorized topic's
// existence is not disclosed, then UNKNOWN_TOPIC_OR_PARTITION.
func (s *Server) partitionCode(denied int16, topic string, partition int32) int16 {
	switch {
	case denied != 0:
		return denied
	case !s.partitionExists(topic, partition):
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}

// groupWaiter submits a JoinGroup's wait on behalf of its request, tied to
// the request's connection (see wait): a client that goes away withdraws
// its join.
type groupWaiter struct{ r *kafkanet.Request }

func (w groupWaiter) Wait(p *purgatory.Purgatory[group.RebalanceKey], op operation.Operation, timeout time.Duration, keys []group.RebalanceKey) error {
	return wait(w.r, p, op, timeout, keys)
}

// clientHost is r's client's address as Kafka shows it in DescribeGroups
// ("/127.0.0.1").
func clientHost(r *kafkanet.Request) string {
	host := r.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return "/" + host
}

// msDuration converts a Kafka millisecond count.
func msDuration[T int32 | int64](n T) time.Duration { return time.Duration(n) * time.Millisecond }

// orEmpty returns *p, or "" for nil: the coordinator takes "" as absent.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nilIfEmpty returns nil for "", else &s.
func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
