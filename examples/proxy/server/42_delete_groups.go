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
	byGroups(s, r, req.Groups,
		func(gs []string) kmsg.Request { sub := *req; sub.Groups = gs; return &sub },
		func(resp kmsg.Response) (int32, []kmsg.DeleteGroupsResponseGroup) {
			m := resp.(*kmsg.DeleteGroupsResponse)
			return m.ThrottleMillis, m.Groups
		},
		func(g kmsg.DeleteGroupsResponseGroup) (string, int16) { return g.Group, g.ErrorCode },
		func(throttle int32, gs []kmsg.DeleteGroupsResponseGroup) {
			resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
			resp.ThrottleMillis, resp.Groups = throttle, gs
			r.Respond(resp)
		})
}
