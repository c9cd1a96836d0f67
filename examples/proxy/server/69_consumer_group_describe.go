package server

// ConsumerGroupDescribe: v0-v1 (KIP-848), as upstream serves it.
//
// Split by coordinator and merged back in request order, as DescribeGroups
// is (groups_split.go).
//
// Authorization (authz.go): DESCRIBE on each group; a denied group
// answers GROUP_AUTHORIZATION_FAILED and is not forwarded. KIP-430's
// authorized operations are the client's, recomputed.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.ConsumerGroupDescribe, 0, 1, (*Server).handleConsumerGroupDescribe).Handler.check = authorizeConsumerGroupDescribe
}

func authorizeConsumerGroupDescribe(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.ConsumerGroupDescribeRequest)
	kept, denied := split(d.Groups, func(g string) int16 { return c.GroupCode(kmsg.ACLOperationDescribe, g) })
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *d; q.Groups = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range m.Groups {
			if g := &m.Groups[i]; g.ErrorCode == 0 && d.IncludeAuthorizedOperations {
				g.AuthorizedOperations = c.Operations(kmsg.ACLResourceTypeGroup, g.Group)
			}
		}
		for _, dg := range denied {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = dg.item, dg.code
			m.Groups = append(m.Groups, g)
		}
	}
}

func (s *Server) handleConsumerGroupDescribe(r *request) {
	req := r.Msg.(*kmsg.ConsumerGroupDescribeRequest)
	byGroups(s, r, req.Groups,
		func(gs []string) kmsg.Request { sub := *req; sub.Groups = gs; return &sub },
		func(resp kmsg.Response) (int32, []kmsg.ConsumerGroupDescribeResponseGroup) {
			m := resp.(*kmsg.ConsumerGroupDescribeResponse)
			return m.ThrottleMillis, m.Groups
		},
		func(g kmsg.ConsumerGroupDescribeResponseGroup) (string, int16) { return g.Group, g.ErrorCode },
		func(throttle int32, gs []kmsg.ConsumerGroupDescribeResponseGroup) {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
			resp.ThrottleMillis, resp.Groups = throttle, gs
			r.Respond(resp)
		})
}
