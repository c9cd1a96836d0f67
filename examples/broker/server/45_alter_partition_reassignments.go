package server

// AlterPartitionReassignments: v0-v1.
//
// Moves partitions to new replicas (KIP-455): for each partition named,
// replicas is its target, in preference order, or null to cancel the
// reassignment in flight. A reassignment adds the target's new brokers
// as followers, which catch up by the ordinary replica fetch; once every
// target replica is in the ISR, the controller makes the target the
// replicas, moves the leadership to the first target replica in sync if
// the leader is not one of them, and the brokers left out drop their
// copy (packages metadata and replica). The answer comes when the
// reassignment has started, or completed if its target was all in sync
// already (a shrink): ListPartitionReassignments follows it after that. A
// cancel reverts to the original replicas.
//
// Errors, per partition, with Kafka's messages where Kafka has one: an
// empty target, a broker twice or one not of the cluster
// INVALID_REPLICA_ASSIGNMENT; an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION; a cancel of a partition not being
// reassigned NO_REASSIGNMENT_IN_PROGRESS, one that would need an unclean
// election the topic does not allow INVALID_REPLICA_ASSIGNMENT; with
// allow_replication_factor_change false (v1, KIP-860) a target whose size
// is not the original replicas' INVALID_REPLICATION_FACTOR. The
// reassignments of one request are one record of the metadata log,
// committed by the active controller (a broker that is not forwards the
// request to it, as Kafka 4's brokers do). timeout_ms bounds the wait
// (REQUEST_TIMED_OUT for every partition past it).
//
// Authorization (authz.go): ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED, top level and for every partition.
//
// A reassignment's catch-up is bounded by the replication throttles
// (KIP-73), as Kafka's: the topic configs
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name the replicas throttled, the
// dynamic broker configs leader.replication.throttled.rate and
// follower.replication.throttled.rate bound them (package replica's
// throttle.go, replication_throttles.go); an in-sync replica is never
// throttled. This API does not set them: the tool does, with
// IncrementalAlterConfigs.
//
// Not implemented: log directories.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.AlterPartitionAssignments, 0, 1, (*Server).handleAlterPartitionReassignments)
}

func (s *Server) handleAlterPartitionReassignments(r *kafkanet.Request) {
	if s.atController(r) {
		return
	}
	req := r.Msg.(*kmsg.AlterPartitionAssignmentsRequest)
	allowRF := req.AllowReplicationFactorChange || req.Version < 1

	// Each partition's slot in the answer, in the request's order; a
	// topic the image lacks is answered for each of its partitions
	// without asking the controller.
	im := s.image()
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	type slot struct{ topic, partition int }
	var reqs []metadata.Reassignment
	var slots []slot
	for i, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		t, terr := im.Topic(rt.Topic)
		for j, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if terr != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(terr), errorMessage(terr)
			} else {
				reqs = append(reqs, metadata.Reassignment{
					Partition: metadata.PartitionRef{Topic: t.ID, Index: rp.Partition}, Target: rp.Replicas})
				slots = append(slots, slot{i, j})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(reqs) == 0 {
		r.Respond(resp)
		return
	}

	ctx, cancel := decisionContext(req.TimeoutMillis)
	defer cancel()
	results, err := s.ctrl().AlterPartitionReassignments(ctx, reqs, allowRF)
	if err != nil {
		refuseDecision(r, req, "partition reassignments", err)
		return
	}
	started := 0
	for k, at := range slots {
		sp := &resp.Topics[at.topic].Partitions[at.partition]
		if err := results[k]; err != nil {
			sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
			continue
		}
		started++
	}
	if started > 0 {
		r.Logger().Info("partition reassignments altered", zap.Int("partitions", started))
	}
	r.Respond(resp)
}
