package server

// Produce: v3-v13, as upstream serves it.
//
// Forwarded to the upstream leader of each partition, at the client's
// version: a request whose partitions all have one leader (the common
// case) goes as it is; one spanning several leaders is split, one piece
// per leader, and the answers merged back in request order. Each piece
// goes on the client's own connection to that leader, in the order the
// client sent its requests, so an idempotent producer's batches reach the
// leader in sequence. A partition the metadata knows no leader of goes to
// any broker, which answers NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION as Kafka does, and the client retries.
//
// Errors are upstream's. A piece that fails in transport (the leader went
// away) answers its partitions NOT_LEADER_OR_FOLLOWER, which clients retry
// after refreshing their metadata; the proxy refreshes its own. The leader
// hints of KIP-951 (current_leader, node_endpoints) name the proxy, never
// an upstream broker. With acks=0 nothing is answered; a piece that cannot
// be written closes the connection, as Kafka does after a failed acks=0
// produce.
//
// Authorization (authz.go): WRITE on the transactional id for
// transactional batches (the gate), WRITE on each topic; a denied topic's
// partitions answer TOPIC_AUTHORIZATION_FAILED and are not forwarded.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() { serve(kmsg.Produce, 3, 13, (*Server).handleProduce).Handler.check = authorizeProduce }

func authorizeProduce(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	p := req.(*kmsg.ProduceRequest)
	return checked(req, p.Topics, func(t kmsg.ProduceRequestTopic) int16 {
		return s.topicCode(c, kmsg.ACLOperationWrite, t.Topic, t.TopicID, p.Version >= 13)
	},
		func(kept []kmsg.ProduceRequestTopic) kmsg.Request { q := *p; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.ProduceRequestTopic]) {
			m := resp.(*kmsg.ProduceResponse)
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = d.item.Topic, d.item.TopicID
			for _, rp := range d.item.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, d.code, -1
				rt.Partitions = append(rt.Partitions, sp)
			}
			m.Topics = append(m.Topics, rt)
		})
}

// topicKey names a topic in a request or an answer: by id from the
// version that has ids, by name before.
type topicKey struct {
	name string
	id   [16]byte
}

func (s *Server) handleProduce(r *request) {
	req := r.Msg.(*kmsg.ProduceRequest)
	byID := req.Version >= 13
	key := func(name string, id [16]byte) topicKey {
		if byID {
			return topicKey{id: id}
		}
		return topicKey{name: name}
	}
	byNode := map[int32]*shard{}
	var shards []*shard
	for _, t := range req.Topics {
		name := t.Topic
		if byID {
			name, _ = s.cl.TopicName(t.TopicID)
		}
		for _, p := range t.Partitions {
			sh := shardsByNode(byNode, &shards, s.leaderOf(name, p.Partition), func() kmsg.Request {
				sub := *req
				sub.Topics = nil
				return &sub
			})
			sub := sh.req.(*kmsg.ProduceRequest)
			if n := len(sub.Topics); n == 0 || key(sub.Topics[n-1].Topic, sub.Topics[n-1].TopicID) != key(t.Topic, t.TopicID) {
				st := t
				st.Partitions = nil
				sub.Topics = append(sub.Topics, st)
			}
			last := &sub.Topics[len(sub.Topics)-1]
			last.Partitions = append(last.Partitions, p)
		}
	}
	if req.Acks == 0 {
		r.fanout(shards, func(done []*shard) {
			if sh := firstFailure(done); sh != nil {
				r.failed(sh.node, sh.err)
				return
			}
			r.NoResponse()
		})
		return
	}
	if len(shards) == 1 {
		shards[0].req = req // one leader: the request as the client sent it
	}
	r.fanout(shards, func(done []*shard) {
		type tp struct {
			t topicKey
			p int32
		}
		results := make(map[tp]kmsg.ProduceResponseTopicPartition)
		for _, sh := range done {
			if sh.err != nil {
				s.cl.Refresh()
				continue
			}
			for _, t := range sh.resp.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					results[tp{key(t.Topic, t.TopicID), p.Partition}] = p
				}
			}
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp, ok := results[tp{key(t.Topic, t.TopicID), p.Partition}]
				if !ok {
					rp = kmsg.NewProduceResponseTopicPartition()
					rp.Partition = p.Partition
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				if rp.ErrorCode == kerr.NotLeaderForPartition.Code {
					s.cl.Refresh()
				}
				if rp.CurrentLeader.LeaderID >= 0 {
					rp.CurrentLeader.LeaderID = s.cfg.NodeID
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(done) == 1 && done[0].err == nil {
			resp.ThrottleMillis = done[0].resp.(*kmsg.ProduceResponse).ThrottleMillis
		}
		if s.hasLeaderHints(done) {
			resp.Brokers = []kmsg.ProduceResponseBroker{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
		}
		r.Respond(resp)
	})
}

// hasLeaderHints reports whether an answer carried KIP-951 node endpoints,
// which the merged answer then carries too, naming the proxy.
func (s *Server) hasLeaderHints(done []*shard) bool {
	for _, sh := range done {
		if sh.err == nil && len(sh.resp.(*kmsg.ProduceResponse).Brokers) > 0 {
			return true
		}
	}
	return false
}
