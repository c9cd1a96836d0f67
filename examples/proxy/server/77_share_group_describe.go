package server

// ShareGroupDescribe: v0-v1 (KIP-932), as upstream serves it.
//
// Split by coordinator and merged back in request order, as
// ConsumerGroupDescribe is (groups_split.go).
//
// Authorization (share_authz.go): DESCRIBE on each group; a denied group
// answers GROUP_AUTHORIZATION_FAILED and is not forwarded. KIP-430's
// authorized operations are the client's, recomputed.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.ShareGroupDescribe, 0, 1, (*Server).handleShareGroupDescribe).Handler.check = authorizeShareGroupDescribe
}

func (s *Server) handleShareGroupDescribe(r *request) {
	req := r.Msg.(*kmsg.ShareGroupDescribeRequest)
	byGroups(s, r, req.GroupIDs,
		func(gs []string) kmsg.Request { sub := *req; sub.GroupIDs = gs; return &sub },
		func(resp kmsg.Response) (int32, []kmsg.ShareGroupDescribeResponseGroup) {
			m := resp.(*kmsg.ShareGroupDescribeResponse)
			return m.ThrottleMillis, m.Groups
		},
		func(g kmsg.ShareGroupDescribeResponseGroup) (string, int16) { return g.GroupID, g.ErrorCode },
		func(throttle int32, gs []kmsg.ShareGroupDescribeResponseGroup) {
			resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
			resp.ThrottleMillis, resp.Groups = throttle, gs
			r.Respond(resp)
		})
}
