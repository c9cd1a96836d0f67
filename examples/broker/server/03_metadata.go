package server

// Metadata: v0-v13.
//
// Describes the cluster from the metadata log as this broker has applied
// it (package cluster): every broker of --cluster that is not fenced (node id,
// host and port, no rack; this broker alone without it), the active
// controller (the quorum's leader, -1 during an election), the cluster id
// the log holds, and each partition's replicas, leader, leader epoch and
// ISR as committed. A partition whose ISR has no live replica is offline:
// LEADER_NOT_AVAILABLE, leader -1, its fenced replicas listed as offline.
// Topics carry their ids (v10+) and may be asked for by id (v10+; an
// unknown id is UNKNOWN_TOPIC_ID). A null topic list (v1+; an empty one in
// v0) asks for every topic.
//
// A broker of a cluster that has not yet applied its own registration
// (it is starting, and catching up on the metadata log) answers a named
// topic its image lacks LEADER_NOT_AVAILABLE, which clients retry, rather
// than UNKNOWN_TOPIC_OR_PARTITION.
//
// An unknown topic is created with num.partitions partitions when
// auto.create.topics.enable is on and the request allows it
// (allow_auto_topic_creation, v4+; always before v4). The active
// controller creates it and answers at once with its partitions; another
// broker forwards the creation to the controller and answers
// LEADER_NOT_AVAILABLE until the metadata log brings it, as Kafka answers
// until its controller has placed it. Otherwise it is
// UNKNOWN_TOPIC_OR_PARTITION. An invalid name is INVALID_TOPIC_EXCEPTION;
// a default.replication.factor above the number of brokers is
// INVALID_REPLICATION_FACTOR.
//
// The offsets topic, __consumer_offsets, is auto-created (by name, when
// allowed) with offsets.topic.num.partitions partitions, as Kafka does; it
// and Kafka's other internal names are is_internal (v1+). See
// package coordinator.
//
// Authorization (authz.go): a topic the client may not DESCRIBE is left
// out of an answer for all topics, and answered TOPIC_AUTHORIZATION_FAILED
// when named (by name or id), whether it exists or not; auto-creating one
// needs CREATE on the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED
// otherwise). The topics' authorized operations (v8+) and the cluster's
// (v8-v10; 0 for a client that may not DESCRIBE it) are filled when asked
// for (KIP-430), else Kafka's "not requested", -2147483648; without an
// authorizer they are every operation of the resource, as Kafka answers.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.Metadata, 0, 13, (*Server).handleMetadata) }

func (s *Server) handleMetadata(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	c := s.access(r)
	im := s.image()
	for _, b := range s.describedBrokers(r, im, false) {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: b.id, Host: b.host, Port: b.port})
	}
	clusterID := s.clusterID(im)
	resp.ClusterID = &clusterID
	resp.ControllerID, _ = s.member.Leader()
	resp.AuthorizedOperations = clusterOperations(c, req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations)
	withOps := req.Version >= 8 && req.IncludeTopicAuthorizedOperations
	describe := func(im *metadata.Image, t *metadata.Topic) kmsg.MetadataResponseTopic {
		mt := s.topicMetadata(im, t)
		if withOps {
			mt.AuthorizedOperations = c.Operations(topicResource, t.Name)
		}
		return mt
	}

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range im.Topics() {
			if c.Sees(opDescribe, topicResource, t.Name) { // the others are not disclosed
				resp.Topics = append(resp.Topics, describe(im, t))
			}
		}
		r.Respond(resp)
		return
	}
	autoCreate := s.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	seen := make(map[string]bool, len(req.Topics))
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			resp.Topics = append(resp.Topics, s.topicMetadataByID(c, im, rt.TopicID, describe))
			continue
		}
		name := *rt.Topic
		if seen[name] {
			continue // Kafka answers each topic once
		}
		seen[name] = true
		if !c.Allows(opDescribe, topicResource, name) {
			// Whether it exists or not: its existence is not disclosed.
			resp.Topics = append(resp.Topics, topicError(name, kerr.TopicAuthorizationFailed.Code))
			continue
		}
		t, err := im.Topic(name)
		switch {
		case errors.Is(err, metadata.ErrUnknownTopic) && !s.registered():
			// Still catching up on the metadata log after a start: the
			// topic may well exist. LEADER_NOT_AVAILABLE makes the
			// client ask again, where UNKNOWN_TOPIC_OR_PARTITION would
			// have it forget the topic.
			err = fmt.Errorf("%w: broker %d is catching up on the metadata log", errLeaderNotAvailable, s.brokers.Self())
		case errors.Is(err, metadata.ErrUnknownTopic) && autoCreate:
			if !c.Sees(opCreate, clusterRes, acl.ClusterName) && !c.Allows(opCreate, topicResource, name) {
				resp.Topics = append(resp.Topics, topicError(name, kerr.TopicAuthorizationFailed.Code))
				continue
			}
			t, err = s.autoCreateTopic(r, name)
		}
		if err != nil {
			resp.Topics = append(resp.Topics, topicError(name, errorCode(err)))
			continue
		}
		resp.Topics = append(resp.Topics, describe(s.image(), t))
	}
	r.Respond(resp)
}

// topicError is a named topic's answer with code.
func topicError(name string, code int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.ErrorCode = code
	return mt
}

// autoCreateTopic creates a topic a metadata request named, with the
// broker's defaults, and answers LEADER_NOT_AVAILABLE for it, as Kafka
// does while its controller creates it: the first answer never lists a
// topic that did not exist when it was asked for. A topic created
// meanwhile by another request is answered as it is.
func (s *Server) autoCreateTopic(r *kafkanet.Request, name string) (*metadata.Topic, error) {
	partitions, rf := s.cfg.NumPartitions, s.cfg.DefaultReplication
	if t := s.coords.Topic(name); t != nil {
		// A coordinator's state topic (__consumer_offsets) is created as
		// FindCoordinator creates it: with its own partition count, and
		// not subject to default.replication.factor.
		if err := t.Ensure(); err != nil {
			return nil, err
		}
		return s.image().Topic(name)
	}
	if err := s.checkReplicationFactor(rf); err != nil {
		return nil, err
	}
	_, err := s.createTopicAtController(name, partitions, rf, nil)
	if errors.Is(err, metadata.ErrTopicExists) || errors.Is(err, storage.ErrTopicExists) {
		// Created meanwhile by another request: answered as it is, or,
		// while this broker's storage has it and its image not yet (the
		// storage follows each record first), as being created. Never
		// TOPIC_ALREADY_EXISTS, which Metadata does not answer.
		if t, err := s.image().Topic(name); err == nil {
			return t, nil
		}
		return nil, fmt.Errorf("%w: %s is being created", errLeaderNotAvailable, name)
	}
	if err != nil {
		return nil, err
	}
	r.Logger().Info("auto-created topic", zap.String("topic", name), zap.Int32("partitions", partitions))
	// As Kafka answers the Metadata that creates a topic: the client
	// asks again, and finds the topic with its leaders.
	return nil, fmt.Errorf("%w: %s is being created", errLeaderNotAvailable, name)
}

// createTopicAtController creates a topic with the broker's default
// configs: through this broker's controller when it is the active one,
// else by asking the active controller, and answering
// LEADER_NOT_AVAILABLE, which clients retry, until the metadata log brings
// the topic here.
func (s *Server) createTopicAtController(name string, partitions int32, rf int16, configs map[string]string) (*metadata.Topic, error) {
	if err := s.data.store.CheckCreate(name, partitions); err != nil {
		return nil, err
	}
	if !s.ctrl().IsActive() {
		s.member.CreateAtController(name, partitions, rf, configs)
		return nil, fmt.Errorf("%w: %s is being created by the controller", errLeaderNotAvailable, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	return s.ctrl().CreateTopic(ctx, controller.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs})
}

// errReplicationFactor is wrapped for a replication factor the broker
// cannot meet (INVALID_REPLICATION_FACTOR).
var errReplicationFactor = errors.New("invalid replication factor")

// checkReplicationFactor accepts a replication factor from one to the
// cluster's size.
func (s *Server) checkReplicationFactor(rf int16) error {
	if rf < 1 || int(rf) > s.brokers.Size() {
		return fmt.Errorf("%w: replication factor %d, but the cluster has %d broker(s)", errReplicationFactor, rf, s.brokers.Size())
	}
	return nil
}

// errLeaderNotAvailable is wrapped for a topic being created
// (LEADER_NOT_AVAILABLE, which clients retry).
var errLeaderNotAvailable = errors.New("leader not available")

// topicMetadataByID answers a topic asked for by id: UNKNOWN_TOPIC_ID, or
// TOPIC_AUTHORIZATION_FAILED for one the client may not DESCRIBE (ids
// are not secret, as Kafka answers), or describe's.
func (s *Server) topicMetadataByID(c access, im *metadata.Image, id [16]byte,
	describe func(*metadata.Image, *metadata.Topic) kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
	t, err := im.TopicByID(id)
	code := kerr.UnknownTopicID.Code
	if err == nil {
		if c.Allows(opDescribe, topicResource, t.Name) {
			return describe(im, t)
		}
		code = kerr.TopicAuthorizationFailed.Code
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = code
	return mt
}

// topicMetadata describes t: each partition's replicas, leader, leader
// epoch and ISR; an offline partition is LEADER_NOT_AVAILABLE, with its
// fenced replicas offline.
func (s *Server) topicMetadata(im *metadata.Image, t *metadata.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = coordinator.IsInternal(name)
	for i, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Replicas, mp.Leader, mp.LeaderEpoch, mp.ISR = p.Replicas, p.Leader, p.LeaderEpoch, p.ISR
		mp.OfflineReplicas, mp.ErrorCode = offlineReplicas(im, p), partitionCode(p)
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offlineReplicas lists p's replicas on fenced brokers (never nil: Kafka
// sends an empty array).
func offlineReplicas(im *metadata.Image, p metadata.Partition) []int32 {
	out := []int32{}
	for _, r := range p.Replicas {
		if im.Fenced(r) {
			out = append(out, r)
		}
	}
	return out
}

// partitionCode is an offline partition's LEADER_NOT_AVAILABLE, else 0.
func partitionCode(p metadata.Partition) int16 {
	if p.Offline() {
		return kerr.LeaderNotAvailable.Code
	}
	return 0
}
