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
	var parts []statePart
	resp.Topics = make([]kmsg.ReadShareGroupStateResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.ReadShareGroupStateResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			rp.Partition, rp.StartOffset = p.Partition, -1
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			parts = append(parts, statePart{key: k, code: &rp.ErrorCode, msg: &rp.ErrorMessage,
				call: func(answered func(error)) {
					s.shareStates.Read(k, p.LeaderEpoch, func(st sharestate.State, err error) {
						if err == nil {
							rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
							for _, b := range st.Batches {
								rp.StateBatches = append(rp.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
									FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
							}
						}
						answered(err)
					})
				}})
		}
	}
	s.askShareStates(parts, func() { r.Respond(resp) })
}
