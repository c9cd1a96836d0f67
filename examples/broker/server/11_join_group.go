package server

// JoinGroup: v0-v9.
//
// Kafka's classic JoinGroup (package group has the protocol): v0 has no
// rebalance timeout, so the session timeout serves as it does in Kafka;
// from v4 a dynamic member's first join is answered MEMBER_ID_REQUIRED with
// its member id (KIP-394); v5 brings static members (group.instance.id,
// KIP-345); v7 the protocol type in the response; v8 the reason, which is
// logged; v9 tells a static leader rejoining a Stable group to skip the
// assignment (KIP-814). A join that waits for its rebalance is an operation
// in the coordinator's Rebalance purgatory tied to the connection: if the
// client goes away meanwhile, its join is withdrawn (a new member is
// removed). A group that is a KIP-848 consumer group with members takes
// the member as a classic member of it (package consumergroup's
// ClassicJoin, Kafka's classicGroupJoinToConsumerGroup): answered at once,
// its generation its member epoch; a static one that replaces the last
// consumer-protocol member turns the group back into a classic one
// (group_types.go); an empty one becomes a classic group.
// A share group's id is
// INCONSISTENT_GROUP_PROTOCOL too, with no member id, as Kafka answers
// (group_types.go). A group with group.max.size members answers a new
// member GROUP_MAX_SIZE_REACHED with no member id, before
// MEMBER_ID_REQUIRED (Kafka's acceptJoiningMember; package group), and a
// consumer group with group.consumer.max.size members a new classic one.
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED, before the group's coordinator is looked
// for.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.JoinGroup, 0, 9, groupRouted((*Server).handleJoinGroup)) }

func (s *Server) handleJoinGroup(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.JoinGroupRequest)
	// The check and the join, which may create the group, are one step
	// (group_types.go).
	defer s.groupTypes.lock(req.Group)()
	if s.consumers.HasMembers(req.Group) {
		s.classicJoinConsumerGroup(r, req)
		if orEmpty(req.InstanceID) != "" {
			// A static classic member that took the place of the
			// last consumer-protocol one leaves classic members
			// alone: the group goes back to the classic protocol
			// (Kafka's validateOnlineDowngradeWithReplacedMemberId).
			s.downgradeConsumerGroupLocked(req.Group)
		}
		return
	}
	if s.share.groups.Exists(req.Group) {
		// A share group is never joined by a classic member (Kafka's
		// classicGroupJoin).
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		r.Respond(resp)
		return
	}
	// An empty consumer group becomes a classic one, as Kafka converts
	// it when a classic member joins.
	_ = s.consumers.Delete([]string{req.Group})
	jr := group.JoinRequest{
		Group:                  req.Group,
		MemberID:               req.MemberID,
		InstanceID:             orEmpty(req.InstanceID),
		ClientID:               r.ClientID,
		ClientHost:             clientHost(r),
		ProtocolType:           req.ProtocolType,
		SessionTimeout:         msDuration(req.SessionTimeoutMillis),
		RebalanceTimeout:       msDuration(req.RebalanceTimeoutMillis),
		RequireKnownMemberID:   req.Version >= 4 && orEmpty(req.InstanceID) == "",
		SupportsSkipAssignment: req.Version >= 9,
		Reason:                 orEmpty(req.Reason),
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	s.groups.JoinGroup(jr, func(res group.JoinResult) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = group.Code(res.Err)
		resp.Generation = res.Generation
		resp.MemberID = res.MemberID
		resp.LeaderID = res.Leader
		resp.SkipAssignment = res.SkipAssignment
		if res.Err == nil {
			resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
		}
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, nilIfEmpty(m.InstanceID), m.Metadata
			resp.Members = append(resp.Members, rm)
		}
		r.Respond(resp)
	}, groupWaiter{r})
}

// classicJoinConsumerGroup joins a classic member to the KIP-848 consumer
// group of its id, which has members (group_types.go).
func (s *Server) classicJoinConsumerGroup(r *kafkanet.Request, req *kmsg.JoinGroupRequest) {
	jr := consumergroup.ClassicJoinRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: orEmpty(req.InstanceID),
		ClientID: r.ClientID, ClientHost: clientHost(r), ProtocolType: req.ProtocolType,
		SessionTimeout: msDuration(req.SessionTimeoutMillis), RebalanceTimeout: msDuration(req.RebalanceTimeoutMillis),
		RequireKnownMemberID: req.Version >= 4 && orEmpty(req.InstanceID) == "",
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, consumergroup.ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	s.consumers.ClassicJoin(jr, func(res consumergroup.ClassicJoinResponse, err *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.MemberID, resp.Generation = res.MemberID, res.Generation
		if err != nil {
			resp.ErrorCode = err.Code
			r.Respond(resp)
			return
		}
		// The coordinator assigns: no member leads.
		resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
		r.Respond(resp)
	})
}
