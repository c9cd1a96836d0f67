package server

// DeleteGroups: v0-v3, as upstream serves it.
//
// Split by coordinator and merged back in request order, as DescribeGroups
// is (15_describe_groups.go).
//
// Authorization (authz.go): DELETE on each group; a denied group answers
// GROUP_AUTHORIZATION_FAILED and is not forwarded.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.DeleteGroups, 0, 3, (*Server).handleDeleteGroups).Handler.check = authorizeDeleteGroups
}

func authorizeDeleteGroups(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.DeleteGroupsRequest)
	return checked(req, d.Groups, func(g string) int16 { return c.GroupCode(kmsg.ACLOperationDelete, g) },
		func(kept []string) kmsg.Request { q := *d; q.Groups = kept; return &q },
		func(resp kmsg.Response, d refused[string]) {
			m := resp.(*kmsg.DeleteGroupsResponse)
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = d.item, d.code
			m.Groups = append(m.Groups, g)
		})
}

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
