package server

// ListPartitionReassignments: v0.
//
// Lists the reassignments in flight (KIP-455): of every partition when
// topics is null, else of the partitions named, each with its replicas
// (the target followed by the replicas being removed), its adding and its
// removing replicas. A partition not being reassigned, unknown, or of an
// unknown topic, is left out, as Kafka's controller leaves it. The active
// controller answers from the image it decides from (a broker that is
// not forwards the request to it, as Kafka 4's brokers do).
//
// Authorization (authz.go): DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED, top level.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.ListPartitionReassignments, 0, 0, (*Server).handleListPartitionReassignments)
}

func (s *Server) handleListPartitionReassignments(r *kafkanet.Request) {
	if s.atController(r) {
		return
	}
	req := r.Msg.(*kmsg.ListPartitionReassignmentsRequest)
	var parts []metadata.PartitionRef
	if req.Topics != nil {
		parts = []metadata.PartitionRef{}
		im := s.image()
		for _, rt := range req.Topics {
			t, err := im.Topic(rt.Topic)
			if err != nil {
				continue
			}
			for _, p := range rt.Partitions {
				parts = append(parts, metadata.PartitionRef{Topic: t.ID, Index: p})
			}
		}
	}
	listed, err := s.ctrl().ListPartitionReassignments(parts)
	if err != nil {
		r.Respond(authz.ErrorResponse(req, errorCode(err)))
		return
	}
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	byTopic := make(map[string]int)
	for _, l := range listed {
		i, ok := byTopic[l.Topic]
		if !ok {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = l.Topic
			resp.Topics = append(resp.Topics, st)
			i = len(resp.Topics) - 1
			byTopic[l.Topic] = i
		}
		sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		sp.Partition = l.Index
		sp.Replicas, sp.AddingReplicas, sp.RemovingReplicas = l.Partition.Replicas, l.Partition.AddingReplicas, l.Partition.RemovingReplicas
		if sp.AddingReplicas == nil {
			sp.AddingReplicas = []int32{}
		}
		if sp.RemovingReplicas == nil {
			sp.RemovingReplicas = []int32{}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	r.Respond(resp)
}
