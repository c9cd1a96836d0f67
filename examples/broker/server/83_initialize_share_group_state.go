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
	n := 0
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			n++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	done := countdown(n, func() { r.Respond(resp) })
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			if err := s.shareStateTopic.KeyError(k.String()); err != nil {
				rp.ErrorCode = err.Code
				done()
				continue
			}
			s.shareStates.Initialize(k, p.StateEpoch, p.StartOffset, func(err error) {
				rp.ErrorCode, rp.ErrorMessage = stateCode(err)
				done()
			})
		}
	}
}
