package server

// OffsetFetch: v0-v10, as upstream serves it.
//
// Before v8 a request names one group and goes to its coordinator, as the
// routes of routes.go do. From v8 it may name several: they are split by
// coordinator, one piece per coordinator, and the answers merged back in
// request order. A coordinator answering NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE for a group is forgotten. A piece that fails
// in transport closes the client's connection (route.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.OffsetFetch, 0, 10, (*Server).handleOffsetFetch) }

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
