package server

// DescribeProducers: v0.
//
// Lists, for each partition this broker leads, the producers whose state
// it keeps (KIP-664): id, epoch, last sequence, the timestamp of their last
// batch, the coordinator epoch of their last marker and, for one with an
// open transaction, the offset it began at: what an operator looks at to
// find the transaction holding a partition's last stable offset back.
// A partition led elsewhere is NOT_LEADER_OR_FOLLOWER, one that does not
// exist UNKNOWN_TOPIC_OR_PARTITION. A topic the client may not READ is
// TOPIC_AUTHORIZATION_FAILED for its partitions, first (authz.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeProducers, 0, 0, (*Server).handleDescribeProducers) }

func (s *Server) handleDescribeProducers(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	c := s.access(r)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		denied := c.TopicCode(opRead, rt.Topic)
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if denied != 0 {
				sp.ErrorCode = denied
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := s.data.store.Partition(rt.Topic, idx)
			if err == nil {
				err = s.replicas.Leads(p)
			}
			if err != nil {
				sp.ErrorCode = replica.ErrorCode(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, ps := range p.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.Respond(resp)
}
