package server

// Metadata: v0-v13.
//
// Describes the cluster: every broker of --cluster (node id, host and port,
// no rack; this broker alone without it), the controller (the smallest
// id), and each partition's replicas as placed by cluster.replicasOf, its
// leader (the first replica), leader epoch 0, its in-sync replicas (this
// broker's own record for partitions it leads, else what their leader
// reported at the last metadata poll) and no offline replicas. Topics carry their ids (v10+) and may be asked
// for by id (v10+; an unknown id is UNKNOWN_TOPIC_ID). A null topic list
// (v1+; an empty one in v0) asks for every topic.
//
// An unknown topic is created with num.partitions partitions when
// auto.create.topics.enable is on and the request allows it
// (allow_auto_topic_creation, v4+; always before v4). The controller
// creates it and answers at once with its partitions; another broker asks
// the controller to create it and answers LEADER_NOT_AVAILABLE until its
// metadata poll brings it, as Kafka answers until its controller has
// placed it. Otherwise it is UNKNOWN_TOPIC_OR_PARTITION. An invalid name
// is INVALID_TOPIC_EXCEPTION; a default.replication.factor above the
// number of brokers is INVALID_REPLICATION_FACTOR.
//
// The offsets topic, __consumer_offsets, is auto-created (by name, when
// allowed) with offsets.topic.num.partitions partitions, as Kafka does; it
// and Kafka's other internal names are is_internal (v1+). See
// offsets_topic.go.
//
// Not implemented: authorization. Cluster and topic authorized operations
// (v8+) keep Kafka's "not requested" value, -2147483648, whatever the
// request asks.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func init() { serve(kmsg.Metadata, 0, 13, (*Server).handleMetadata) }

func (s *Server) handleMetadata(r *request) {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, n := range s.cl.nodes {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: n.id, Host: n.host, Port: n.port})
	}
	resp.ClusterID = &s.data.clusterID
	resp.ControllerID = s.cl.controller()

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range s.data.store.Topics() {
			resp.Topics = append(resp.Topics, s.topicMetadata(t))
		}
		r.respond(resp)
		return
	}
	autoCreate := s.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	seen := make(map[string]bool, len(req.Topics))
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			resp.Topics = append(resp.Topics, s.topicMetadataByID(rt.TopicID))
			continue
		}
		name := *rt.Topic
		if seen[name] {
			continue // Kafka answers each topic once
		}
		seen[name] = true
		t, err := s.data.store.Topic(name)
		if errors.Is(err, storage.ErrUnknownTopic) && autoCreate {
			t, err = s.autoCreateTopic(r, name)
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = errorCode(err)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(t))
	}
	r.respond(resp)
}

// autoCreateTopic creates a topic a metadata request named, with the
// broker's defaults. A topic created meanwhile by another request is used.
func (s *Server) autoCreateTopic(r *request, name string) (*storage.Topic, error) {
	partitions, rf := s.cfg.NumPartitions, s.cfg.DefaultReplication
	if name == offsetsTopic {
		// Created as FindCoordinator creates it: with its own partition
		// count, and not subject to default.replication.factor.
		partitions, rf = s.cfg.OffsetsTopicPartitions, 1
	} else if err := s.checkReplicationFactor(rf); err != nil {
		return nil, err
	}
	if !s.cl.isController() {
		// Only the controller creates topics: ask it, and answer
		// LEADER_NOT_AVAILABLE, which clients retry, until this
		// broker's metadata poll brings the topic here.
		s.peers.createAtController(name, partitions, rf)
		return nil, fmt.Errorf("%w: %s is being created by the controller", errLeaderNotAvailable, name)
	}
	if name == offsetsTopic {
		if err := s.ensureOffsetsTopic(r); err != nil {
			return nil, err
		}
		return s.data.store.Topic(name)
	}
	t, err := s.data.store.CreateTopicSpec(storage.TopicSpec{Name: name, Partitions: s.cfg.NumPartitions,
		Config: s.data.store.TopicDefaults(), ReplicationFactor: rf})
	if errors.Is(err, storage.ErrTopicExists) {
		return s.data.store.Topic(name)
	}
	if err == nil {
		r.log().Info("auto-created topic", zap.String("topic", name), zap.Int32("partitions", s.cfg.NumPartitions))
	}
	return t, err
}

// errReplicationFactor is wrapped for a replication factor the broker
// cannot meet (INVALID_REPLICATION_FACTOR).
var errReplicationFactor = errors.New("invalid replication factor")

// checkReplicationFactor accepts a replication factor from one to the
// cluster's size.
func (s *Server) checkReplicationFactor(rf int16) error {
	if rf < 1 || int(rf) > s.cl.size() {
		return fmt.Errorf("%w: replication factor %d, but the cluster has %d broker(s)", errReplicationFactor, rf, s.cl.size())
	}
	return nil
}

// errLeaderNotAvailable is wrapped for a topic being created
// (LEADER_NOT_AVAILABLE, which clients retry).
var errLeaderNotAvailable = errors.New("leader not available")

func (s *Server) topicMetadataByID(id [16]byte) kmsg.MetadataResponseTopic {
	t, err := s.data.store.TopicByID(id)
	if err != nil {
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = id
		mt.ErrorCode = kerr.UnknownTopicID.Code
		return mt
	}
	return s.topicMetadata(t)
}

// topicMetadata describes t: each partition's replicas, leader and ISR.
func (s *Server) topicMetadata(t *storage.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index()
		mp.Replicas = s.replicasOf(p)
		mp.Leader = mp.Replicas[0]
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.ISR = s.isr(p)
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
