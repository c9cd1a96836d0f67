package server

// ShareFetch: v1-v2 (KIP-932), as upstream serves it.
//
// The client's share session with the proxy becomes one share session
// per upstream leader of its partitions (share_sessions.go): each
// ShareFetch is split into a request ("leg") per leader, at that
// leader's session epoch, naming the partitions new to that session,
// forgetting those that left it (or whose leader moved) and carrying the
// acknowledgements of the partitions it holds (a partition the client
// names and forgets in one request, as kgo does to acknowledge one it
// stopped fetching, leaves the session, as in Kafka: its
// acknowledgements go with the forget to the session that acquired its
// records, and nothing more is fetched of it); the answers are merged,
// each partition's leader hint naming the proxy.
//
// The client is answered as a broker answers (share_fetch_wait.go): as
// soon as one leg brings acquired records or an error, once every leg
// carrying its acknowledgements has answered (their error codes belong
// in this answer), or when every leg has answered (each waits at most
// max_wait_ms upstream). A leg still out stays in flight on the member's
// upstream session, at most one per leader; what it acquires goes to the
// member's next ShareFetch, which is answered at once. A ShareFetch sends
// no leg to a leader whose leg is out: it adopts that leg, or, to carry
// acknowledgements there, waits for it and sends its own next. Records
// acquired for a partition the client left meanwhile are released
// upstream in the next leg. Closing (-1) goes to every upstream session
// at once, and Kafka releases what the member holds.
//
// The client's epoch is checked here: SHARE_SESSION_NOT_FOUND,
// INVALID_SHARE_SESSION_EPOCH, as a broker answers; an upstream answer of
// either drops the member's state, so that the client's new session opens
// new ones upstream. Acknowledgements of a partition no upstream session
// can take (one that just moved to a leader with no session yet) answer
// NOT_LEADER_OR_FOLLOWER in acknowledge_error_code: the records come
// back when their locks expire. A leg that fails in transport drops the
// member's state and closes the connection of the client waiting for it
// (route.go); records a leg acquired whose answer is lost that way (or
// with the client's connection, or the proxy's Close) come back when
// their acquisition locks expire.
//
// Authorization (share_authz.go): READ on the group, then READ on each
// topic; a denial answers the whole request.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	serve(kmsg.ShareFetch, 1, 2, (*Server).handleShareFetch).Handler.check = authorizeShareFetch
}

func (s *Server) handleShareFetch(r *request) {
	req := r.Msg.(*kmsg.ShareFetchRequest)
	s.startShareFetch(req, s.shareLeader, r.send, func(resp *kmsg.ShareFetchResponse, failed *shard) {
		if failed != nil {
			r.failed(failed.node, failed.err)
			return
		}
		r.Respond(resp)
	})
}

// shareFetchPlan is what the answer to a client's ShareFetch needs to
// know of the request.
type shareFetchPlan struct {
	member   shareMember
	parts    []shareTP         // the request's partitions, in its order
	named    map[shareTP]bool  // partitions the request names
	maxBytes map[shareTP]int32 // their partition_max_bytes
	acks     map[shareTP][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	// carried: acknowledgements some leg carries. Guarded by
	// shareSessions.mu until the request is answered.
	carried map[shareTP]bool
}

// newShareFetchPlan reads req: its plan, each partition's
// partition_max_bytes, and the partitions it forgets.
func newShareFetchPlan(req *kmsg.ShareFetchRequest) (*shareFetchPlan, map[shareTP]int32, []shareTP) {
	plan := &shareFetchPlan{
		member:  shareMember{orEmpty(req.GroupID), orEmpty(req.MemberID)},
		named:   map[shareTP]bool{},
		acks:    map[shareTP][]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{},
		carried: map[shareTP]bool{},
	}
	var forgotten []shareTP
	maxBytes := map[shareTP]int32{}
	plan.maxBytes = maxBytes
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			plan.parts = append(plan.parts, tp)
			plan.named[tp] = true
			maxBytes[tp] = p.PartitionMaxBytes
			if len(p.AcknowledgementBatches) > 0 {
				plan.acks[tp] = p.AcknowledgementBatches
			}
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, shareTP{t.TopicID, p})
		}
	}
	return plan, maxBytes, forgotten
}

// legRequest is the request of leg, from the client's req: the
// partitions it names, with the acknowledgements of those it owns (an
// opening request carries none; a closing one does), then the other
// partitions it owns that the client acknowledges, in the client's
// order, then those whose records it releases; and what it forgets.
// carries reports whether it carries acknowledgements of the client's.
//
// REQUIRES: shareSessions.mu held (plan.carried).
func (plan *shareFetchPlan) legRequest(req *kmsg.ShareFetchRequest, leg *shareLeg) (sub *kmsg.ShareFetchRequest, carries bool) {
	sub = new(kmsg.ShareFetchRequest)
	*sub = *req
	sub.ShareSessionEpoch, sub.Topics, sub.ForgottenTopicsData = leg.epoch, nil, nil
	named := map[shareTP]bool{}
	add := func(tp shareTP) {
		named[tp] = true
		p := kmsg.NewShareFetchRequestTopicPartition()
		mb, ok := leg.maxBytes[tp] // a partition new upstream: the client's, kept since it named it
		if !ok {
			mb = plan.maxBytes[tp]
		}
		p.Partition, p.PartitionMaxBytes = tp.partition, mb
		if leg.epoch != 0 && leg.owns[tp] && plan.acks[tp] != nil {
			p.AcknowledgementBatches, plan.carried[tp], carries = plan.acks[tp], true, true
		}
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, leg.release[tp]...)
		sub.Topics = appendShareFetchPartition(sub.Topics, tp.topic, p)
	}
	for _, tp := range leg.name {
		add(tp)
	}
	for _, tp := range plan.parts { // the client's order
		if !named[tp] && leg.owns[tp] && plan.acks[tp] != nil {
			add(tp)
		}
	}
	released := make([]shareTP, 0, len(leg.release))
	for tp := range leg.release {
		released = append(released, tp)
	}
	sortShareTPs(released)
	for _, tp := range released {
		if !named[tp] {
			add(tp)
		}
	}
	for _, tp := range leg.forget {
		sub.ForgottenTopicsData = appendShareForgotten(sub.ForgottenTopicsData, tp)
	}
	for _, tp := range leg.unheld {
		if !slices.Contains(leg.forget, tp) {
			sub.ForgottenTopicsData = appendShareForgotten(sub.ForgottenTopicsData, tp)
		}
	}
	return sub, carries
}

// answerUncarried answers NOT_LEADER_OR_FOLLOWER in resp for the
// acknowledgements no leg carried.
func (plan *shareFetchPlan) answerUncarried(resp *kmsg.ShareFetchResponse) {
	for _, tp := range plan.parts {
		if plan.acks[tp] != nil && !plan.carried[tp] && resp.ErrorCode == 0 {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.AcknowledgeErrorCode = tp.partition, kerr.NotLeaderForPartition.Code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			resp.Topics = appendShareFetchResult(resp.Topics, tp.topic, rp)
		}
	}
}

// shareLeader is a share partition's upstream leader, or any broker (which
// answers NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_ID) when the metadata
// does not know it; see leaderOf.
func (s *Server) shareLeader(tp shareTP) int32 {
	name, ok := s.cl.TopicName(tp.topic)
	if !ok {
		s.cl.Refresh()
		return s.cl.Any()
	}
	return s.leaderOf(name, tp.partition)
}

// fromUpstream is what the proxy makes of a partition of an upstream
// leader's share answer: a NOT_LEADER_OR_FOLLOWER refreshes its metadata,
// so that the next request goes to the new leader, and a leader hint
// names the proxy, the only broker its clients know.
func (s *Server) fromUpstream(code int16, leader *int32) {
	if code == kerr.NotLeaderForPartition.Code {
		s.cl.Refresh()
	}
	if *leader >= 0 {
		*leader = s.cfg.NodeID
	}
}

// mergeShareFetch adds an upstream leader's answer to resp: its
// partitions, each leader hint naming the proxy; its error, the first
// one kept; the largest throttle. It reports whether the answer is a
// session error, which drops the member's state (see share_sessions.go).
func (s *Server) mergeShareFetch(resp, m *kmsg.ShareFetchResponse) (sessionErr bool) {
	resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
	if m.ErrorCode != 0 {
		sessionErr = sessionError(m.ErrorCode)
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
			resp.Topics = appendShareFetchResult(resp.Topics, t.TopicID, p)
		}
	}
	if len(m.NodeEndpoints) > 0 && len(resp.NodeEndpoints) == 0 {
		resp.NodeEndpoints = []kmsg.ShareFetchResponseNodeEndpoint{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
	}
	return sessionErr
}

// sessionError reports whether an upstream answer says the member's share
// session there is not the one the proxy keeps.
func sessionError(code int16) bool {
	return code == kerr.ShareSessionNotFound.Code || code == kerr.InvalidShareSessionEpoch.Code
}

// appendShareFetchPartition puts p in topics under topic, the topic's
// entry made on its first partition.
func appendShareFetchPartition(topics []kmsg.ShareFetchRequestTopic, topic [16]byte, p kmsg.ShareFetchRequestTopicPartition) []kmsg.ShareFetchRequestTopic {
	for i := range topics {
		if topics[i].TopicID == topic {
			topics[i].Partitions = append(topics[i].Partitions, p)
			return topics
		}
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID, t.Partitions = topic, []kmsg.ShareFetchRequestTopicPartition{p}
	return append(topics, t)
}

// appendShareForgotten puts tp in a ShareFetch's forgotten topics.
func appendShareForgotten(topics []kmsg.ShareFetchRequestForgottenTopicsData, tp shareTP) []kmsg.ShareFetchRequestForgottenTopicsData {
	for i := range topics {
		if topics[i].TopicID == tp.topic {
			topics[i].Partitions = append(topics[i].Partitions, tp.partition)
			return topics
		}
	}
	t := kmsg.NewShareFetchRequestForgottenTopicsData()
	t.TopicID, t.Partitions = tp.topic, []int32{tp.partition}
	return append(topics, t)
}

// appendShareFetchResult puts p in an answer's topics under topic.
func appendShareFetchResult(topics []kmsg.ShareFetchResponseTopic, topic [16]byte, p kmsg.ShareFetchResponseTopicPartition) []kmsg.ShareFetchResponseTopic {
	for i := range topics {
		if topics[i].TopicID == topic {
			topics[i].Partitions = append(topics[i].Partitions, p)
			return topics
		}
	}
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID, t.Partitions = topic, []kmsg.ShareFetchResponseTopicPartition{p}
	return append(topics, t)
}

// orEmpty returns *p, or "" for nil.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
