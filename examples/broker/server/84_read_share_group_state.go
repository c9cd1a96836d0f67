package server

// ReadShareGroupState: v0.
//
// Inter-broker (KIP-932): a share partition's leader reads its state from
// the share coordinator (package sharestate; share_state.go), naming its
// leader epoch: FENCED_LEADER_EPOCH below the stored one; one above it is
// stored, and the partition answered once that is replicated. A key never
// initialized is answered start offset -1. Per partition also
// NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ReadShareGroupState, 0, 0, (*Server).handleReadShareGroupState) }

func (s *Server) handleReadShareGroupState(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	n := 0
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
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
			s.shareStates.Read(k, p.LeaderEpoch, func(st sharestate.State, err error) {
				rp.ErrorCode, rp.ErrorMessage = stateCode(err)
				if err == nil {
					rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
					for _, b := range st.Batches {
						rp.StateBatches = append(rp.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
							FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
					}
				}
				done()
			})
		}
	}
}
