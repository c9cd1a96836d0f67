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
	n := 0
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
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
			s.shareStates.Delete(k, func(err error) {
				rp.ErrorCode, rp.ErrorMessage = stateCode(err)
				done()
			})
		}
	}
}
