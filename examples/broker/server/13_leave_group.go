package server

// LeaveGroup: v0-v5.
//
// Removes members, and the group rebalances. v0-v2 name one member and
// answer its error at the top level; v3+ batch members, by member id or, to
// remove a static member administratively, by instance id alone (KIP-345),
// each answered on its own; v5 adds a reason, which is logged. Classic
// members of a KIP-848 consumer group leave it (package consumergroup's
// ClassicLeave), answered once their removal is durable.
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
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
	// Which coordinator has the group does not change meanwhile
	// (group_types.go): a conversion takes the same lock.
	unlock := s.groupTypes.lock(req.Group)
	if s.consumers.HasMembers(req.Group) {
		leavers := make([]consumergroup.ClassicLeaver, len(members))
		for i, m := range members {
			leavers[i] = consumergroup.ClassicLeaver{MemberID: m.MemberID, InstanceID: m.InstanceID}
		}
		s.consumers.ClassicLeave(req.Group, leavers, func(cerrs []*kerr.Error) {
			s.answerLeaveGroup(r, req, resp, nil, cerrs)
		})
		unlock()
		return
	}
	gerr, errs := s.groups.LeaveGroup(req.Group, members)
	unlock()
	s.answerLeaveGroup(r, req, resp, gerr, errs)
}

// answerLeaveGroup answers a LeaveGroup with the group's error, or each
// member's.
func (s *Server) answerLeaveGroup(r *kafkanet.Request, req *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse,
	gerr *kerr.Error, errs []*kerr.Error) {
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
