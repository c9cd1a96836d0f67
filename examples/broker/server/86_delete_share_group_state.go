package server

// DeleteShareGroupState: v0.
//
// Inter-broker (KIP-932): deletes share partitions' state at the share
// coordinator (package sharestate; share_state.go), each answered once
// its tombstone is replicated in __share_group_state; a key with no state
// at once. Per partition also NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteShareGroupState, 0, 0, (*Server).handleDeleteShareGroupState) }

func (s *Server) handleDeleteShareGroupState(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	var parts []statePart
	resp.Topics = make([]kmsg.DeleteShareGroupStateResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.DeleteShareGroupStateResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			rp.Partition = p.Partition
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			parts = append(parts, statePart{key: k, code: &rp.ErrorCode, msg: &rp.ErrorMessage,
				call: func(answered func(error)) {
					s.shareStates.Delete(k, answered)
				}})
		}
	}
	s.askShareStates(parts, func() { r.Respond(resp) })
}
