package server

// DescribeGroups: v0-v6, as upstream serves it.
//
// Split by coordinator, one piece per coordinator, and the answers merged
// back in request order; groups, members and errors are upstream's. A
// coordinator answering NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE for a
// group is forgotten. A piece that fails in transport closes the client's
// connection (route.go).
//
// Authorization (authz.go): DESCRIBE on each group; a denied group
// answers GROUP_AUTHORIZATION_FAILED and is not forwarded. KIP-430's
// authorized operations are the client's, recomputed.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.DescribeGroups, 0, 6, (*Server).handleDescribeGroups).Handler.check = authorizeDescribeGroups
}

func authorizeDescribeGroups(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.DescribeGroupsRequest)
	kept, denied := split(d.Groups, func(g string) int16 { return c.GroupCode(kmsg.ACLOperationDescribe, g) })
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *d; q.Groups = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.DescribeGroupsResponse)
		if d.IncludeAuthorizedOperations {
			for i := range m.Groups {
				if g := &m.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = c.Operations(kmsg.ACLResourceTypeGroup, g.Group)
				}
			}
		}
		for _, dg := range denied {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = dg.item, dg.code
			m.Groups = append(m.Groups, g)
		}
	}
}

func (s *Server) handleDescribeGroups(r *request) {
	req := r.Msg.(*kmsg.DescribeGroupsRequest)
	byGroups(s, r, req.Groups,
		func(gs []string) kmsg.Request { sub := *req; sub.Groups = gs; return &sub },
		func(resp kmsg.Response) (int32, []kmsg.DescribeGroupsResponseGroup) {
			m := resp.(*kmsg.DescribeGroupsResponse)
			return m.ThrottleMillis, m.Groups
		},
		func(g kmsg.DescribeGroupsResponseGroup) (string, int16) { return g.Group, g.ErrorCode },
		func(throttle int32, gs []kmsg.DescribeGroupsResponseGroup) {
			resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
			resp.ThrottleMillis, resp.Groups = throttle, gs
			r.Respond(resp)
		})
}
