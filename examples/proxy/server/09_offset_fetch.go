package server

// OffsetFetch: v0-v10, as upstream serves it.
//
// Before v8 a request names one group and goes to its coordinator, as the
// routes of routes.go do. From v8 it may name several: they are split by
// coordinator, one piece per coordinator, and the answers merged back in
// request order. A coordinator answering NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE for a group is forgotten. A piece that fails
// in transport closes the client's connection (route.go).
//
// Authorization (authz.go): DESCRIBE on the group (the gate before v8;
// from v8 per group, a denied group answered GROUP_AUTHORIZATION_FAILED
// and not forwarded), and DESCRIBE on each topic of the answer: a topic
// the client named answers TOPIC_AUTHORIZATION_FAILED in each partition,
// one it did not (a request for all) is hidden.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.OffsetFetch, 0, 10, (*Server).handleOffsetFetch).Handler.check = authorizeOffsetFetch
}

func authorizeOffsetFetch(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	o := req.(*kmsg.OffsetFetchRequest)
	if o.Version < 8 {
		return req, func(resp kmsg.Response) {
			m := resp.(*kmsg.OffsetFetchResponse)
			m.Topics = olderTopicsSeen(c, o.Topics == nil, m.Topics)
		}
	}
	kept, denied := split(o.Groups, func(g kmsg.OffsetFetchRequestGroup) int16 {
		return c.GroupCode(kmsg.ACLOperationDescribe, g.Group)
	})
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *o; q.Groups = kept; return &q })
	all := map[string]bool{} // the groups asked for all their topics
	for _, g := range kept {
		all[g.Group] = g.Topics == nil
	}
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.OffsetFetchResponse)
		for i := range m.Groups {
			g := &m.Groups[i]
			g.Topics = groupTopicsSeen(c, all[g.Group], g.Topics)
		}
		for _, d := range denied {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = d.item.Group, d.code
			m.Groups = append(m.Groups, g)
		}
	}
}

// offsetTopicsSeen keeps the topics of an OffsetFetch answer that the
// client may DESCRIBE: one it did not name is hidden (all: a request for
// all topics), one it named answers TOPIC_AUTHORIZATION_FAILED in each
// partition (deny), as Kafka.
func offsetTopicsSeen[T any](c authz.Access, all bool, ts []T, name func(*T) string, deny func(*T)) []T {
	out := ts[:0]
	for i := range ts {
		t := &ts[i]
		switch {
		case all && !c.Sees(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name(t)):
			continue
		case !all && !c.Allows(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name(t)):
			deny(t)
		}
		out = append(out, *t)
	}
	return out
}

// olderTopicsSeen is offsetTopicsSeen for an answer before v8.
func olderTopicsSeen(c authz.Access, all bool, ts []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseTopic {
	return offsetTopicsSeen(c, all, ts, func(t *kmsg.OffsetFetchResponseTopic) string { return t.Topic },
		func(t *kmsg.OffsetFetchResponseTopic) {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
			}
		})
}

// groupTopicsSeen is offsetTopicsSeen for a group of a v8+ answer.
func groupTopicsSeen(c authz.Access, all bool, ts []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	return offsetTopicsSeen(c, all, ts, func(t *kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic },
		func(t *kmsg.OffsetFetchResponseGroupTopic) {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
			}
		})
}

func (s *Server) handleOffsetFetch(r *request) {
	req := r.Msg.(*kmsg.OffsetFetchRequest)
	if req.Version < 8 {
		byCoordinator(coordinatorGroup, func(kmsg.Request) string { return req.Group })(s, r)
		return
	}
	groups := make([]string, len(req.Groups))
	for i, g := range req.Groups {
		groups[i] = g.Group
	}
	s.coordinators(coordinatorGroup, groups, func(nodes map[string]int32) {
		byNode := map[int32]*shard{}
		var shards []*shard
		for _, g := range req.Groups {
			sh := shardsByNode(byNode, &shards, nodes[g.Group], func() kmsg.Request {
				sub := *req
				sub.Groups = nil
				return &sub
			})
			sub := sh.req.(*kmsg.OffsetFetchRequest)
			sub.Groups = append(sub.Groups, g)
		}
		r.fanout(shards, func(done []*shard) {
			if sh := firstFailure(done); sh != nil {
				r.failed(sh.node, sh.err)
				return
			}
			byGroup := map[string]kmsg.OffsetFetchResponseGroup{}
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			for _, sh := range done {
				m := sh.resp.(*kmsg.OffsetFetchResponse)
				resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
				for _, g := range m.Groups {
					if staleCoordinator(g.ErrorCode) {
						s.cl.ForgetCoordinator(coordinatorGroup, g.Group)
					}
					byGroup[g.Group] = g
				}
			}
			for _, g := range req.Groups {
				if rg, ok := byGroup[g.Group]; ok {
					resp.Groups = append(resp.Groups, rg)
				}
			}
			r.Respond(resp)
		})
	})
}
