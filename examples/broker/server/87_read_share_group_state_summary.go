package server

// ReadShareGroupStateSummary: v0-v1.
//
// Inter-broker (KIP-932): share partitions' state epoch, leader epoch and
// start offset at the share coordinator (package sharestate;
// share_state.go), without their records; start offset -1 for a key never
// initialized. Nothing is written. Per partition also NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS. delivery_complete_count (v1) is answered
// -1: not kept.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.ReadShareGroupStateSummary, 0, 1, (*Server).handleReadShareGroupStateSummary)
}

func (s *Server) handleReadShareGroupStateSummary(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p.Partition, -1, -1
			k := sharestate.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			if err := s.shareStateTopic.KeyError(k.String()); err != nil {
				rp.ErrorCode = err.Code
			} else if st, err := s.shareStates.Summary(k); err != nil {
				rp.ErrorCode, rp.ErrorMessage = stateCode(err)
			} else {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = st.StateEpoch, st.LeaderEpoch, st.StartOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.Respond(resp)
}
