package server

// Metadata: v0-v13, as upstream serves it.
//
// Forwarded to any upstream broker as the client sent it (auto-creation,
// topic ids, authorized operations and errors are upstream's), and the
// answer rewritten so that the client sees the proxy as its one broker:
// the broker list is the proxy alone (node.id, advertised host and port,
// no rack), it is the controller, and it leads every partition that has a
// leader upstream, as its one replica and in-sync replica. Leader epochs
// stay upstream's, so that the epochs clients send back (fetch's
// current_leader_epoch) are upstream's too. A partition with no leader
// upstream keeps leader -1 and its error. The proxy's own view of the
// cluster takes the answer in before the rewrite.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.Metadata, 0, 13, (*Server).handleMetadata) }

func (s *Server) handleMetadata(r *request) {
	req := r.Msg.(*kmsg.MetadataRequest)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	r.forward(s.cl.Any(), req, func(resp kmsg.Response) {
		m := resp.(*kmsg.MetadataResponse)
		s.cl.Absorb(m, all)
		s.rewriteMetadata(m)
	})
}

// rewriteMetadata makes the proxy the one broker of m.
func (s *Server) rewriteMetadata(m *kmsg.MetadataResponse) {
	self := s.cfg.NodeID
	m.Brokers = []kmsg.MetadataResponseBroker{{NodeID: self, Host: s.host, Port: s.port}}
	m.ControllerID = self
	for i := range m.Topics {
		for j := range m.Topics[i].Partitions {
			p := &m.Topics[i].Partitions[j]
			if p.Leader >= 0 {
				p.Leader = self
			}
			p.Replicas = []int32{self}
			p.ISR = []int32{self}
			p.OfflineReplicas = []int32{}
		}
	}
}
