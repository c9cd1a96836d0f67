package server

// DeleteGroups: v0-v3, as upstream serves it.
//
// Split by coordinator and merged back in request order, as DescribeGroups
// is (15_describe_groups.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.DeleteGroups, 0, 3, (*Server).handleDeleteGroups) }

func (s *Server) handleDeleteGroups(r *request) {
	req := r.Msg.(*kmsg.DeleteGroupsRequest)
	s.coordinators(coordinatorGroup, req.Groups, func(nodes map[string]int32) {
		byNode := map[int32]*shard{}
		var shards []*shard
		for _, g := range req.Groups {
			sh := shardsByNode(byNode, &shards, nodes[g], func() kmsg.Request {
				sub := *req
				sub.Groups = nil
				return &sub
			})
			sub := sh.req.(*kmsg.DeleteGroupsRequest)
			sub.Groups = append(sub.Groups, g)
		}
		if len(shards) == 0 {
			shards = append(shards, &shard{node: s.cl.Any(), req: req})
		}
		r.fanout(shards, func(done []*shard) {
			if sh := firstFailure(done); sh != nil {
				r.failed(sh.node, sh.err)
				return
			}
			byGroup := map[string]kmsg.DeleteGroupsResponseGroup{}
			resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
			for _, sh := range done {
				m := sh.resp.(*kmsg.DeleteGroupsResponse)
				resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
				for _, g := range m.Groups {
					if staleCoordinator(g.ErrorCode) {
						s.cl.ForgetCoordinator(coordinatorGroup, g.Group)
					}
					byGroup[g.Group] = g
				}
			}
			for _, g := range req.Groups {
				if rg, ok := byGroup[g]; ok {
					resp.Groups = append(resp.Groups, rg)
				}
			}
			r.Respond(resp)
		})
	})
}
