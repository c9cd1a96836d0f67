package server

// CreateTopics: v0-v7.
//
// Creates each topic with its partitions at once; validate_only
// (v1+) checks everything and creates nothing. Partitions and replication
// factor of -1 (v4+) take num.partitions and default.replication.factor.
// Only the active controller creates topics (NOT_CONTROLLER elsewhere;
// clients send CreateTopics to the controller Metadata names): it commits
// the topic to the metadata log, and answers once it is applied here. A
// replication factor from one to the number of brokers is accepted
// (INVALID_REPLICATION_FACTOR otherwise); replicas are placed by
// metadata.Place, so a manual replica assignment must give every
// partition, numbered from 0, exactly that placement
// (INVALID_REPLICA_ASSIGNMENT otherwise; with an assignment, partitions and
// replication factor must be -1: INVALID_REQUEST). A name
// taken is TOPIC_ALREADY_EXISTS, an invalid one INVALID_TOPIC_EXCEPTION,
// fewer than one partition or more than 65536 (a bound of this in-memory
// broker; Kafka has none) INVALID_PARTITIONS, a topic that would take the
// broker past max.broker.partitions, all topics together (KIP-578's name:
// by default 100,000, and with log.dirs no more than RLIMIT_NOFILE leaves
// for their files, see limits.go) POLICY_VIOLATION with a message saying
// so, and a topic listed twice INVALID_REQUEST, as in Kafka.
//
// Topic configs: retention.ms, retention.bytes, max.message.bytes,
// min.insync.replicas, unclean.leader.election.enable (which the
// controller acts on when it elects leaders), and compaction's
// cleanup.policy, min.cleanable.dirty.ratio, min.compaction.lag.ms,
// max.compaction.lag.ms, delete.retention.ms, and segment.bytes and
// segment.ms (a topic's own roll its segment files in log.dirs) are
// enforced; any other name is INVALID_CONFIG, so that a client
// asking for a config the broker does not have learns it does not get it.
// The topic's own configs are in the metadata log, so every broker of a
// cluster has them. Responses from v5 carry the partitions, replication
// factor and those configs, each with its source (the broker default, or
// the topic's own); from v7, the topic id (zero for validate_only, as
// Kafka).
//
// Authorization (authz.go): CREATE on the cluster, or on the topic
// (TOPIC_AUTHORIZATION_FAILED otherwise, after the duplicates' check);
// from v5, a created topic the client may not DESCRIBE_CONFIGS is
// answered without its configs, its topic_config_error_code
// TOPIC_AUTHORIZATION_FAILED, as Kafka answers.
//
// Throttling (mutation_quota.go): a created topic's partitions are
// charged to its client's controller_mutation_rate once the topic has
// passed the checks above (validate_only too, as Kafka's controller
// charges it); from v6, a topic its client cannot afford, once it owes,
// is THROTTLING_QUOTA_EXCEEDED with Kafka's message, the others are
// created, and throttle_time_ms says how long the debt takes to pay;
// before v6 every topic is created and the debt only throttles. The
// connection is muted for the throttle.
//
// Not implemented: the timeout (creation is synchronous) and creation
// policies.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.CreateTopics, 0, 7, (*Server).handleCreateTopics) }

func (s *Server) handleCreateTopics(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	c := s.access(r)
	clusterWide := c.Sees(opCreate, clusterRes, acl.ClusterName)
	mq := s.mutationQuota(r, strictCreateTopics)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var err error
		switch {
		case count[rt.Topic] > 1:
			err = fmt.Errorf("%w: topic %q is listed more than once", errInvalidRequest, rt.Topic)
		case !clusterWide && !c.Allows(opCreate, topicResource, rt.Topic):
			err = errTopicAuthorization
		default:
			err = s.createTopic(r, mq, req.ValidateOnly, &rt, &st)
			if err == nil && !c.Sees(opDescribeConfigs, topicResource, rt.Topic) {
				st.Configs, st.ConfigErrorCode = nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		if err != nil {
			refuseData(r, err)
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	throttleMutations(r, mq, resp)
	r.Respond(resp)
}

// errInvalidRequest is wrapped for a request that is well formed but that
// Kafka refuses as a whole (INVALID_REQUEST).
var errInvalidRequest = errors.New("invalid request")

// errReplicaAssignment is wrapped for a replica assignment the broker
// cannot follow (INVALID_REPLICA_ASSIGNMENT).
var errReplicaAssignment = errors.New("invalid replica assignment")

// createTopic creates (or, with validateOnly, checks) the topic rt asks for
// and fills st with what it has; its error is the topic's. Its partitions
// are charged to mq once it has passed the checks, unless mq refuses them
// (errThrottlingQuota).
func (s *Server) createTopic(r *kafkanet.Request, mq *quota.Mutations, validateOnly bool, rt *kmsg.CreateTopicsRequestTopic,
	st *kmsg.CreateTopicsResponseTopic) error {
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return fmt.Errorf("%w: with a replica assignment, partitions and replication factor must be -1", errInvalidRequest)
		}
		if err := s.checkAssignment(rt.ReplicaAssignment); err != nil {
			return err
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), int16(len(rt.ReplicaAssignment[0].Replicas))
	}
	if partitions == -1 {
		partitions = s.cfg.NumPartitions
	}
	if rf == -1 {
		rf = s.cfg.DefaultReplication
	}
	if err := s.checkReplicationFactor(rf); err != nil {
		return err
	}
	if !s.ctrl().IsActive() {
		leader, _ := s.member.Leader()
		return fmt.Errorf("%w: broker %d is the active controller", errNotController, leader)
	}
	cfg := s.data.store.TopicDefaults()
	own := make(map[string]bool, len(rt.Configs))
	configs := make(map[string]string, len(rt.Configs))
	for _, c := range rt.Configs {
		var err error
		if cfg, err = cfg.With(c.Name, c.Value); err != nil {
			return err
		}
		own[c.Name] = c.Value != nil
		if c.Value != nil {
			configs[c.Name] = *c.Value
		} else {
			delete(configs, c.Name)
		}
	}
	if err := s.data.store.CheckCreate(rt.Topic, partitions); err != nil {
		return err
	}
	if !mq.Record(int(partitions)) {
		return errThrottlingQuota
	}
	if !validateOnly {
		ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
		defer cancel()
		t, err := s.ctrl().CreateTopic(ctx, controller.TopicSpec{Name: rt.Topic, Partitions: partitions,
			ReplicationFactor: rf, Configs: configs})
		if err != nil {
			mq.Unrecord(int(partitions)) // not created after all
			return err
		}
		st.TopicID = t.ID
		r.Logger().Info("created topic", zap.String("topic", t.Name), zap.Int32("partitions", partitions))
	}
	st.NumPartitions, st.ReplicationFactor = partitions, rf
	for _, v := range cfg.Values() {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = v.Name, &v.Value
		c.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if own[v.Name] {
			c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		st.Configs = append(st.Configs, c)
	}
	return nil
}

// checkAssignment accepts a manual assignment only if it numbers the
// partitions from 0, gives each the same number of replicas, and places
// them where the controller would (metadata.Place): placement is fixed.
func (s *Server) checkAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) error {
	seen := make([]bool, len(as))
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || seen[a.Partition] {
			return fmt.Errorf("%w: partitions must be numbered 0 to %d, each once", errReplicaAssignment, len(as)-1)
		}
		seen[a.Partition] = true
		rf := len(as[0].Replicas)
		if want := s.brokers.Placement(a.Partition, rf); len(a.Replicas) != rf || rf > s.brokers.Size() || !slices.Equal(a.Replicas, want) {
			return fmt.Errorf("%w: partition %d on brokers %v, but this cluster places it on %v",
				errReplicaAssignment, a.Partition, a.Replicas, want)
		}
	}
	return nil
}
