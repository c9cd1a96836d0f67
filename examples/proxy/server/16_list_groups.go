package server

// ListGroups: v0-v5, as upstream serves it.
//
// Each upstream broker lists the groups it coordinates, so the request
// goes to every broker of the metadata (any one before the first), and the
// groups are merged; the error is the first a broker gave. A broker that
// fails in transport closes the client's connection (route.go).
//
// Authorization (authz.go): a client that may not DESCRIBE the cluster
// sees only the groups it may DESCRIBE.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.ListGroups, 0, 5, (*Server).handleListGroups).Handler.check = authorizeListGroups
}

func authorizeListGroups(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	if c.Sees(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return req, nil
	}
	return req, func(resp kmsg.Response) {
		m := resp.(*kmsg.ListGroupsResponse)
		m.Groups = slices.DeleteFunc(m.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !c.Sees(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group)
		})
	}
}

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
