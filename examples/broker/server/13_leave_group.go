package server

// LeaveGroup: v0-v5.
//
// Removes members, and the group rebalances. v0-v2 name one member and
// answer its error at the top level; v3+ batch members, by member id or, to
// remove a static member administratively, by instance id alone (KIP-345),
// each answered on its own; v5 adds a reason, which is logged.
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.LeaveGroup, 0, 5, groupRouted((*Server).handleLeaveGroup)) }

func (s *Server) handleLeaveGroup(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var members []group.MemberIdentity
	if req.Version < 3 {
		members = []group.MemberIdentity{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, group.MemberIdentity{MemberID: m.MemberID, InstanceID: orEmpty(m.InstanceID), Reason: orEmpty(m.Reason)})
		}
	}
	gerr, errs := s.groups.LeaveGroup(req.Group, members)
	resp.ErrorCode = group.Code(gerr)
	if req.Version < 3 {
		if gerr == nil && len(errs) == 1 {
			resp.ErrorCode = group.Code(errs[0])
		}
		r.Respond(resp)
		return
	}
	for i, err := range errs {
		m := kmsg.NewLeaveGroupResponseMember()
		m.MemberID, m.InstanceID, m.ErrorCode = req.Members[i].MemberID, req.Members[i].InstanceID, group.Code(err)
		resp.Members = append(resp.Members, m)
	}
	r.Respond(resp)
}
