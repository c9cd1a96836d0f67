package server

// DescribeGroups: v0-v6, as upstream serves it.
//
// Split by coordinator, one piece per coordinator, and the answers merged
// back in request order; groups, members and errors are upstream's. A
// coordinator answering NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE for a
// group is forgotten. A piece that fails in transport closes the client's
// connection (route.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.DescribeGroups, 0, 6, (*Server).handleDescribeGroups) }

func (s *Server) handleDescribeGroups(r *request) {
	req := r.Msg.(*kmsg.DescribeGroupsRequest)
	s.coordinators(coordinatorGroup, req.Groups, func(nodes map[string]int32) {
		byNode := map[int32]*shard{}
		var shards []*shard
		for _, g := range req.Groups {
			sh := shardsByNode(byNode, &shards, nodes[g], func() kmsg.Request {
				sub := *req
				sub.Groups = nil
				return &sub
			})
			sub := sh.req.(*kmsg.DescribeGroupsRequest)
			sub.Groups = append(sub.Groups, g)
		}
		if len(shards) == 0 {
			shards = append(shards, &shard{node: s.cl.Any(), req: req}) // no group: upstream answers it
		}
		r.fanout(shards, func(done []*shard) {
			if sh := firstFailure(done); sh != nil {
				r.failed(sh.node, sh.err)
				return
			}
			byGroup := map[string]kmsg.DescribeGroupsResponseGroup{}
			resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
			for _, sh := range done {
				m := sh.resp.(*kmsg.DescribeGroupsResponse)
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
