package server

// DescribeShareGroupOffsets: v0-v1 (KIP-932), as upstream serves it.
//
// Split by coordinator and merged back in request order, as
// DescribeGroups is (groups_split.go).
//
// Authorization (share_authz.go): DESCRIBE on each group; a denied group
// answers GROUP_AUTHORIZATION_FAILED and is not forwarded.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.DescribeShareGroupOffsets, 0, 1, (*Server).handleDescribeShareGroupOffsets).Handler.check =
		authorizeDescribeShareGroupOffsets
}

func (s *Server) handleDescribeShareGroupOffsets(r *request) {
	req := r.Msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	ids := make([]string, len(req.Groups))
	byID := make(map[string]kmsg.DescribeShareGroupOffsetsRequestGroup, len(req.Groups))
	for i, g := range req.Groups {
		ids[i], byID[g.GroupID] = g.GroupID, g
	}
	byGroups(s, r, ids,
		func(gs []string) kmsg.Request {
			sub := *req
			sub.Groups = nil
			for _, g := range gs {
				sub.Groups = append(sub.Groups, byID[g])
			}
			return &sub
		},
		func(resp kmsg.Response) (int32, []kmsg.DescribeShareGroupOffsetsResponseGroup) {
			m := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
			return m.ThrottleMillis, m.Groups
		},
		func(g kmsg.DescribeShareGroupOffsetsResponseGroup) (string, int16) { return g.GroupID, g.ErrorCode },
		func(throttle int32, gs []kmsg.DescribeShareGroupOffsetsResponseGroup) {
			resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
			resp.ThrottleMillis, resp.Groups = throttle, gs
			r.Respond(resp)
		})
}
