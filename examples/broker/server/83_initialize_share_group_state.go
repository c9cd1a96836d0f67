package server

// InitializeShareGroupState: v0.
//
// Inter-broker (KIP-932): sets share partitions' start offsets at a state
// epoch at the share coordinator (package sharestate; share_state.go),
// each answered once its record is replicated in __share_group_state.
// Per partition: NOT_COORDINATOR where this broker does not coordinate
// its key, COORDINATOR_LOAD_IN_PROGRESS while it loads it,
// FENCED_STATE_EPOCH for a state epoch below the stored one.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, the brokers',
// else CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.InitializeShareGroupState, 0, 0, (*Server).handleInitializeShareGroupState)
}

func (s *Server) handleInitializeShareGroupState(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.InitializeShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	var parts []statePart
	resp.Topics = make([]kmsg.InitializeShareGroupStateResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.InitializeShareGroupStateResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			rp.Partition = p.Partition
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			parts = append(parts, statePart{key: k, code: &rp.ErrorCode, msg: &rp.ErrorMessage,
				call: func(answered func(error)) {
					s.shareStates.Initialize(k, p.StateEpoch, p.StartOffset, answered)
				}})
		}
	}
	s.askShareStates(parts, func() { r.Respond(resp) })
}
