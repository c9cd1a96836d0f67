package server

// WriteShareGroupState: v0-v1.
//
// Inter-broker (KIP-932): a share partition's leader writes its state
// whole (start offset, the window's records in runs of one delivery state
// and count) to the share coordinator (package sharestate;
// share_state.go), answered once replicated in __share_group_state. Per
// partition: FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH for epochs below
// the stored ones, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
// delivery_complete_count (v1) is not kept.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.WriteShareGroupState, 0, 1, (*Server).handleWriteShareGroupState) }

func (s *Server) handleWriteShareGroupState(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	var parts []statePart
	resp.Topics = make([]kmsg.WriteShareGroupStateResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.WriteShareGroupStateResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			rp.Partition = p.Partition
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			parts = append(parts, statePart{key: k, code: &rp.ErrorCode, msg: &rp.ErrorMessage,
				call: func(answered func(error)) {
					st := sharestate.State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
					for _, b := range p.StateBatches {
						st.Batches = append(st.Batches, sharestate.Batch{First: b.FirstOffset, Last: b.LastOffset,
							DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
					}
					s.shareStates.Write(k, st, answered)
				}})
		}
	}
	s.askShareStates(parts, func() { r.Respond(resp) })
}
