package server

// Heartbeat: v0-v4.
//
// Keeps a member's session alive: the pending session operation in the
// coordinator's Heartbeat purgatory completes and the next is submitted.
// REBALANCE_IN_PROGRESS tells the member to rejoin. v3 brings static
// members' instance ids (FENCED_INSTANCE_ID for a replaced member id).
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.Heartbeat, 0, 4, groupRouted((*Server).handleHeartbeat)) }

func (s *Server) handleHeartbeat(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = group.Code(s.groups.Heartbeat(group.HeartbeatRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: orEmpty(req.InstanceID), Generation: req.Generation,
	}))
	r.Respond(resp)
}
