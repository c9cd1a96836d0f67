package server

// FindCoordinator: v0-v6, as upstream serves it.
//
// Forwarded to any upstream broker. Each coordinator upstream names is
// remembered (group and transaction requests are routed to it), and
// answered as the proxy itself: the client sends its group requests to
// the proxy, which forwards them to the coordinator. Errors
// (COORDINATOR_NOT_AVAILABLE while the offsets topic is created, say)
// reach the client as upstream gave them.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.FindCoordinator, 0, 6, (*Server).handleFindCoordinator) }

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
