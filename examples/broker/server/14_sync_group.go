package server

// SyncGroup: v0-v5.
//
// The leader's SyncGroup brings every member's assignment; a follower's
// waits for it without blocking anything (its answer is parked on the
// member, as in Kafka). v3 brings static members' instance ids, v5 the
// protocol type and name, checked against the group's
// (INCONSISTENT_GROUP_PROTOCOL) and returned. A classic member of a
// KIP-848 consumer group syncs there (package consumergroup's
// ClassicSync): answered at once with its assignment, which the
// coordinator computed, in the ConsumerProtocol.
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.SyncGroup, 0, 5, groupRouted((*Server).handleSyncGroup)) }

func (s *Server) handleSyncGroup(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.SyncGroupRequest)
	// Which coordinator has the group does not change meanwhile
	// (group_types.go): a conversion takes the same lock.
	defer s.groupTypes.lock(req.Group)()
	if s.consumers.HasMembers(req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		b, err := s.consumers.ClassicSync(req.Group, req.MemberID, orEmpty(req.InstanceID), req.Generation, req.ProtocolType, req.Protocol)
		if err != nil {
			resp.ErrorCode = err.Code
		} else {
			resp.MemberAssignment = b
			resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
		}
		r.Respond(resp)
		return
	}
	sr := group.SyncRequest{
		Group:        req.Group,
		MemberID:     req.MemberID,
		InstanceID:   orEmpty(req.InstanceID),
		Generation:   req.Generation,
		ProtocolType: orEmpty(req.ProtocolType),
		Protocol:     orEmpty(req.Protocol),
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	s.groups.SyncGroup(sr, func(res group.SyncResult) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = group.Code(res.Err)
		resp.MemberAssignment = res.Assignment
		if res.Err == nil {
			resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
		}
		r.Respond(resp)
	})
}
