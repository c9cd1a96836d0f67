package server

// ShareAcknowledge: v1-v2 (KIP-932), as upstream serves it.
//
// Acknowledgements of the client's share session, split by the upstream
// session that holds each partition (share_sessions.go: where its records
// were acquired), each part at that session's epoch; the sessions it does
// not concern keep theirs. Epoch -1 closes the client's session and every
// upstream one, each with its acknowledgements. The answers are merged as
// ShareFetch's (78_share_fetch.go); a partition no upstream session holds
// answers NOT_LEADER_OR_FOLLOWER, its records coming back when their
// locks expire.
//
// An upstream session with a ShareFetch leg in flight (share_fetch_wait.go)
// gets its part at the next epoch at once: on the client connection's
// upstream connection it queues behind that leg, which the broker answers
// first, so the epochs arrive in turn; its answer waits for that leg's.
//
// Authorization (share_authz.go): READ on the group, then READ on each
// topic; a denial answers the whole request.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	serve(kmsg.ShareAcknowledge, 1, 2, (*Server).handleShareAcknowledge).Handler.check = authorizeShareAcknowledge
}

func (s *Server) handleShareAcknowledge(r *request) {
	req := r.Msg.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	k := shareMember{orEmpty(req.GroupID), orEmpty(req.MemberID)}
	var tps []shareTP
	batches := map[shareTP]kmsg.ShareAcknowledgeRequestTopicPartition{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			tps = append(tps, tp)
			batches[tp] = p
		}
	}
	legs, orphans, err := s.shares.ack(k, req.ShareSessionEpoch, tps)
	if err != nil {
		resp.ErrorCode = err.Code
		r.Respond(resp)
		return
	}
	shards := make([]*shard, len(legs))
	for i, leg := range legs {
		sub := *req
		sub.ShareSessionEpoch, sub.Topics = leg.epoch, nil
		for _, tp := range tps {
			if leg.owns[tp] {
				sub.Topics = appendShareAck(sub.Topics, tp.topic, batches[tp])
			}
		}
		shards[i] = &shard{node: leg.node, req: &sub}
	}
	r.fanout(shards, func(done []*shard) {
		if sh := firstFailure(done); sh != nil {
			s.shares.drop(k)
			r.failed(sh.node, sh.err)
			return
		}
		for _, sh := range done {
			m := sh.resp.(*kmsg.ShareAcknowledgeResponse)
			resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
			if m.ErrorCode != 0 {
				if sessionError(m.ErrorCode) {
					s.shares.drop(k)
				}
				if resp.ErrorCode == 0 {
					resp.ErrorCode, resp.ErrorMessage = m.ErrorCode, m.ErrorMessage
				}
			}
			if resp.AcquisitionLockTimeoutMillis == 0 {
				resp.AcquisitionLockTimeoutMillis = m.AcquisitionLockTimeoutMillis
			}
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					s.fromUpstream(p.ErrorCode, &p.CurrentLeader.LeaderID)
					resp.Topics = appendShareAckResult(resp.Topics, t.TopicID, p)
				}
			}
			if len(m.NodeEndpoints) > 0 && len(resp.NodeEndpoints) == 0 {
				resp.NodeEndpoints = []kmsg.ShareAcknowledgeResponseNodeEndpoint{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
			}
		}
		for _, tp := range orphans {
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition, p.ErrorCode = tp.partition, kerr.NotLeaderForPartition.Code
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			resp.Topics = appendShareAckResult(resp.Topics, tp.topic, p)
		}
		r.Respond(resp)
	})
}

// appendShareAck puts p in a ShareAcknowledge's topics under topic.
func appendShareAck(topics []kmsg.ShareAcknowledgeRequestTopic, topic [16]byte, p kmsg.ShareAcknowledgeRequestTopicPartition) []kmsg.ShareAcknowledgeRequestTopic {
	for i := range topics {
		if topics[i].TopicID == topic {
			topics[i].Partitions = append(topics[i].Partitions, p)
			return topics
		}
	}
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID, t.Partitions = topic, []kmsg.ShareAcknowledgeRequestTopicPartition{p}
	return append(topics, t)
}

// appendShareAckResult puts p in an answer's topics under topic.
func appendShareAckResult(topics []kmsg.ShareAcknowledgeResponseTopic, topic [16]byte, p kmsg.ShareAcknowledgeResponseTopicPartition) []kmsg.ShareAcknowledgeResponseTopic {
	for i := range topics {
		if topics[i].TopicID == topic {
			topics[i].Partitions = append(topics[i].Partitions, p)
			return topics
		}
	}
	t := kmsg.NewShareAcknowledgeResponseTopic()
	t.TopicID, t.Partitions = topic, []kmsg.ShareAcknowledgeResponseTopicPartition{p}
	return append(topics, t)
}
