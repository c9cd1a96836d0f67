package server

// ShareGroupHeartbeat: v0-v1 (KIP-932), as upstream serves it.
//
// Forwarded as it is to the group's coordinator, as ConsumerGroupHeartbeat
// is (routes.go). A member that leaves (epoch -1) has its share sessions'
// state dropped here (share_sessions.go): its sessions upstream are
// dropped by the brokers as it leaves.
//
// Authorization (share_authz.go): READ on the group, then DESCRIBE on
// each subscribed topic; a denial answers the whole request.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.ShareGroupHeartbeat, 0, 1, (*Server).handleShareGroupHeartbeat).Handler.check = authorizeShareGroupHeartbeat
}

var forwardShareGroupHeartbeat = byCoordinator(coordinatorGroup,
	func(q kmsg.Request) string { return q.(*kmsg.ShareGroupHeartbeatRequest).GroupID })

func (s *Server) handleShareGroupHeartbeat(r *request) {
	if req := r.Msg.(*kmsg.ShareGroupHeartbeatRequest); req.MemberEpoch == -1 {
		s.shares.dropMember(req.GroupID, req.MemberID)
	}
	forwardShareGroupHeartbeat(s, r)
}
