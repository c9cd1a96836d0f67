package server

// ListGroups: v0-v5, as upstream serves it.
//
// Each upstream broker lists the groups it coordinates, so the request
// goes to every broker of the metadata (any one before the first), and the
// groups are merged; the error is the first a broker gave. A broker that
// fails in transport closes the client's connection (route.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.ListGroups, 0, 5, (*Server).handleListGroups) }

func (s *Server) handleListGroups(r *request) {
	req := r.Msg.(*kmsg.ListGroupsRequest)
	var shards []*shard
	for _, b := range s.cl.Brokers() {
		shards = append(shards, &shard{node: b.ID, req: req})
	}
	if len(shards) == 0 {
		shards = append(shards, &shard{node: s.cl.Any(), req: req})
	}
	r.fanout(shards, func(done []*shard) {
		if sh := firstFailure(done); sh != nil {
			r.failed(sh.node, sh.err)
			return
		}
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		for _, sh := range done {
			m := sh.resp.(*kmsg.ListGroupsResponse)
			resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
			if resp.ErrorCode == 0 {
				resp.ErrorCode = m.ErrorCode
			}
			resp.Groups = append(resp.Groups, m.Groups...)
		}
		r.Respond(resp)
	})
}
