package server

// Heartbeat: v0-v4.
//
// Keeps a member's session alive: the pending session operation in the
// coordinator's Heartbeat purgatory completes and the next is submitted.
// REBALANCE_IN_PROGRESS tells the member to rejoin. v3 brings static
// members' instance ids (FENCED_INSTANCE_ID for a replaced member id).
// A classic member of a KIP-848 consumer group heartbeats there (package
// consumergroup's ClassicHeartbeat): REBALANCE_IN_PROGRESS when it must
// join again to take its next assignment.
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
	// Which coordinator has the group does not change meanwhile
	// (group_types.go): a conversion takes the same lock.
	defer s.groupTypes.lock(req.Group)()
	if s.consumers.HasMembers(req.Group) {
		if err := s.consumers.ClassicHeartbeat(req.Group, req.MemberID, orEmpty(req.InstanceID), req.Generation); err != nil {
			resp.ErrorCode = err.Code
		}
		r.Respond(resp)
		return
	}
	resp.ErrorCode = group.Code(s.groups.Heartbeat(group.HeartbeatRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: orEmpty(req.InstanceID), Generation: req.Generation,
	}))
	r.Respond(resp)
}
