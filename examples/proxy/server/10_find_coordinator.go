package server

// FindCoordinator: v0-v6, as upstream serves it.
//
// Forwarded to any upstream broker. Each coordinator upstream names is
// remembered (group and transaction requests are routed to it), and
// answered as the proxy itself: the client sends its group requests to
// the proxy, which forwards them to the coordinator. Errors
// (COORDINATOR_NOT_AVAILABLE while the offsets topic is created, say)
// reach the client as upstream gave them.
//
// Authorization (authz.go): DESCRIBE on each key's group, or
// transactional id; a denied key answers GROUP_ or
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and is not forwarded. Another
// coordinator type (a share group's) answers INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.FindCoordinator, 0, 6, (*Server).handleFindCoordinator).Handler.check = authorizeFindCoordinator
}

func authorizeFindCoordinator(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	f := req.(*kmsg.FindCoordinatorRequest)
	code := func(key string) int16 {
		switch f.CoordinatorType {
		case coordinatorGroup:
			return c.GroupCode(kmsg.ACLOperationDescribe, key)
		case coordinatorTransaction:
			if c.Allows(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
				return 0
			}
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return kerr.InvalidRequest.Code
	}
	if f.Version < 4 {
		if denied := code(f.CoordinatorKey); denied != 0 {
			return nil, func(resp kmsg.Response) {
				m := resp.(*kmsg.FindCoordinatorResponse)
				m.ErrorCode, m.NodeID, m.Port = denied, -1, -1
			}
		}
		return req, nil
	}
	kept, denied := split(f.CoordinatorKeys, code)
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *f; q.CoordinatorKeys = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.FindCoordinatorResponse)
		for _, d := range denied {
			k := kmsg.NewFindCoordinatorResponseCoordinator()
			k.Key, k.ErrorCode, k.NodeID, k.Port = d.item, d.code, -1, -1
			m.Coordinators = append(m.Coordinators, k)
		}
	}
}

func (s *Server) handleFindCoordinator(r *request) {
	req := r.Msg.(*kmsg.FindCoordinatorRequest)
	r.forward(s.cl.Any(), req, func(resp kmsg.Response) {
		m := resp.(*kmsg.FindCoordinatorResponse)
		if m.Version < 4 {
			if m.ErrorCode == 0 {
				s.cl.SetCoordinator(req.CoordinatorType, req.CoordinatorKey, m.NodeID)
				m.NodeID, m.Host, m.Port = s.cfg.NodeID, s.host, s.port
			}
			return
		}
		for i := range m.Coordinators {
			c := &m.Coordinators[i]
			if c.ErrorCode == 0 {
				s.cl.SetCoordinator(req.CoordinatorType, c.Key, c.NodeID)
				c.NodeID, c.Host, c.Port = s.cfg.NodeID, s.host, s.port
			}
		}
	})
}
