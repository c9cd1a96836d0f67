package server

// ListOffsets: v1-v11, as upstream serves it.
//
// Forwarded to the upstream leader of each partition, split and merged as
// Produce is (00_produce.go): the offsets, timestamps, leader epochs and
// errors are upstream's. A piece that fails in transport answers its
// partitions NOT_LEADER_OR_FOLLOWER, which clients retry.
//
// Authorization (authz.go): DESCRIBE on each topic; a denied topic's
// partitions answer TOPIC_AUTHORIZATION_FAILED and are not forwarded.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.ListOffsets, 1, 11, (*Server).handleListOffsets).Handler.check = authorizeListOffsets
}

func authorizeListOffsets(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	l := req.(*kmsg.ListOffsetsRequest)
	return checked(req, l.Topics, func(t kmsg.ListOffsetsRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationDescribe, t.Topic) },
		func(kept []kmsg.ListOffsetsRequestTopic) kmsg.Request { q := *l; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.ListOffsetsRequestTopic]) {
			m := resp.(*kmsg.ListOffsetsResponse)
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = d.item.Topic
			for _, rp := range d.item.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, d.code
				rt.Partitions = append(rt.Partitions, sp)
			}
			m.Topics = append(m.Topics, rt)
		})
}

func (s *Server) handleListOffsets(r *request) {
	req := r.Msg.(*kmsg.ListOffsetsRequest)
	byNode := map[int32]*shard{}
	var shards []*shard
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sh := shardsByNode(byNode, &shards, s.leaderOf(t.Topic, p.Partition), func() kmsg.Request {
				sub := *req
				sub.Topics = nil
				return &sub
			})
			sub := sh.req.(*kmsg.ListOffsetsRequest)
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].Topic != t.Topic {
				st := t
				st.Partitions = nil
				sub.Topics = append(sub.Topics, st)
			}
			last := &sub.Topics[len(sub.Topics)-1]
			last.Partitions = append(last.Partitions, p)
		}
	}
	if len(shards) == 1 {
		shards[0].req = req
	}
	r.fanout(shards, func(done []*shard) {
		type tp struct {
			t string
			p int32
		}
		results := make(map[tp]kmsg.ListOffsetsResponseTopicPartition)
		for _, sh := range done {
			if sh.err != nil {
				s.cl.Refresh()
				continue
			}
			for _, t := range sh.resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					results[tp{t.Topic, p.Partition}] = p
				}
			}
		}
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp, ok := results[tp{t.Topic, p.Partition}]
				if !ok {
					rp = kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition = p.Partition
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.Respond(resp)
	})
}
