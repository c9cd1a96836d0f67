package server

// AlterPartition: v2.
//
// A leader asks the active controller to change a partition's ISR (Kafka's
// AlterPartition, KIP-497): each partition is checked against its leader,
// leader epoch and partition epoch (FENCED_LEADER_EPOCH,
// NOT_LEADER_OR_FOLLOWER, INVALID_UPDATE_VERSION), and the new ISR must
// hold the leader and only replicas, none of them fenced when added
// (INELIGIBLE_REPLICA; INVALID_REQUEST otherwise). The answer carries the
// partition as committed. A broker that is not the active controller
// answers NOT_CONTROLLER. Topics are named by id (v2).
//
// Not implemented: v0-v1 (topic names) and v3 (broker epochs per ISR
// member), leader recovery state, and any check that the sender is a
// broker of the cluster (served on the client listener, as this broker has
// no other).
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, the brokers',
// else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AlterPartition, 2, 2, (*Server).handleAlterPartition) }

func (s *Server) handleAlterPartition(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !s.ctrl().IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		r.Respond(resp)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			p, err := s.ctrl().AlterPartition(ctx, metadata.TopicID(rt.TopicID), rp.Partition, req.BrokerID,
				rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR)
			sp.ErrorCode = alterPartitionCode(err)
			if err == nil {
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.Respond(resp)
}

// alterPartitionCode is Kafka's error code for an ISR change's failure.
func alterPartitionCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, metadata.ErrUnknownTopic):
		return kerr.UnknownTopicID.Code
	case errors.Is(err, metadata.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, metadata.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, metadata.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, metadata.ErrStalePartitionEpoch):
		return kerr.InvalidUpdateVersion.Code
	case errors.Is(err, metadata.ErrInvalidISR):
		return kerr.IneligibleReplica.Code
	}
	return kerr.UnknownServerError.Code
}
