package server

// ConsumerGroupHeartbeat: v0-v1 (KIP-848).
//
// A member of a "consumer" protocol group joins (epoch 0), heartbeats at
// its epoch saying what it owns, or leaves (-1; -2 a static member for
// now); the answer carries its epoch and, when it changed or the member
// said what it owns, its assignment (package consumergroup computes and
// reconciles it). v1 brings SubscribedTopicRegex, resolved by the
// coordinator against every topic, and requires the member to name itself.
// A heartbeat that changes the group is answered once the change is
// durable in the group's __consumer_offsets partition, where a coordinator
// that takes the group over finds it (package consumergroup/records).
// A member joining a classic group with members converts it into a
// consumer group, whose classic members the consumer coordinator drives
// from then on (Kafka's online upgrade, convertToConsumerGroup), if
// group.consumer.migration.policy allows an upgrade and the group's
// protocol type is "consumer"; otherwise the group is GROUP_ID_NOT_FOUND,
// as Kafka answers when it does not convert. A share group's id is
// GROUP_ID_NOT_FOUND too, as Kafka's getOrMaybeCreateConsumerGroup
// answers (group_types.go). A group with group.consumer.max.size members
// answers any other member GROUP_MAX_SIZE_REACHED, and a classic group
// with more is not upgraded (GROUP_ID_NOT_FOUND).
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED. The topics of a subscription are not
// checked against the principal (Kafka 4 leaves out of a regular
// expression's topics those it may not DESCRIBE).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.ConsumerGroupHeartbeat, 0, 1, groupRouted((*Server).handleConsumerGroupHeartbeat))
}

func (s *Server) handleConsumerGroupHeartbeat(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	// The checks and a join, which may create the group, are one step
	// (group_types.go).
	defer s.groupTypes.lock(req.Group)()
	if s.share.groups.Exists(req.Group) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = nilIfEmpty(notConsumerGroup(req.Group))
		r.Respond(resp)
		return
	}
	if s.classicGroupActive(req.Group) {
		if err, msg := s.upgradeClassicGroup(req); err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, nilIfEmpty(msg)
			r.Respond(resp)
			return
		}
	}
	hr := consumergroup.HeartbeatRequest{
		Version: req.Version, Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: orEmpty(req.InstanceID), RackID: req.RackID, RebalanceTimeout: req.RebalanceTimeoutMillis,
		SubscribedNames: req.SubscribedTopicNames, SubscribedRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: r.ClientID, ClientHost: clientHost(r),
	}
	if req.Topics != nil {
		hr.Owned = consumergroup.Assignment{}
		for _, t := range req.Topics {
			hr.Owned[t.TopicID] = append(hr.Owned[t.TopicID], t.Partitions...)
		}
	}
	// Answered once the heartbeat's change of the group is durable in
	// __consumer_offsets (consumergroup.WithStore), from the goroutine
	// that ends its wait.
	defer func() {
		if hr.MemberEpoch == consumergroup.LeaveEpoch {
			// Its last consumer-protocol member gone, a group of
			// classic members is a classic group again.
			s.downgradeConsumerGroupLocked(req.Group)
		}
	}()
	s.consumers.Heartbeat(hr, func(out consumergroup.HeartbeatResponse, err *kerr.Error, msg string) {
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, nilIfEmpty(msg)
			r.Respond(resp)
			return
		}
		resp.MemberID, resp.MemberEpoch = &out.MemberID, out.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(out.HeartbeatInterval.Milliseconds())
		if out.Assignment != nil {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, id := range out.Assignment.Topics() {
				t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				t.TopicID, t.Partitions = id, out.Assignment[id]
				a.Topics = append(a.Topics, t)
			}
			resp.Assignment = &a
		}
		r.Respond(resp)
	})
}

// downgradeConsumerGroupLocked converts group back into a classic group
// if its members are all classic ones now (Kafka's convertToClassicGroup)
// and group.consumer.migration.policy allows a downgrade.
//
// REQUIRES: the group's groupTypes stripe held.
func (s *Server) downgradeConsumerGroupLocked(id string) {
	switch s.cfg.GroupConsumerMigrationPolicy {
	case "bidirectional", "downgrade":
	default:
		return
	}
	cg, ok := s.consumers.ToClassic(id, s.cfg.GroupMaxSize)
	if !ok {
		return
	}
	cv := group.Conversion{Group: cg.Group, Generation: cg.Generation}
	for _, m := range cg.Members {
		cm := group.ConvertedMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, SessionTimeout: m.SessionTimeout, RebalanceTimeout: m.RebalanceTimeout,
			Assignment: m.Assignment}
		for _, p := range m.Protocols {
			cm.Protocols = append(cm.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
		}
		cv.Members = append(cv.Members, cm)
	}
	if err := s.groups.FromConsumer(cv); err != nil {
		// Its members find no group and join again from scratch.
		s.log.Warn("a consumer group could not go back to the classic protocol", zap.String("group", cg.Group), zap.Error(err))
	}
}

// notConsumerGroup is Kafka's message for a group id that is another
// type's (getOrMaybeCreateConsumerGroup).
func notConsumerGroup(id string) string { return "Group " + id + " is not a consumer group." }

// upgradeClassicGroup converts the classic group with members that a
// member joins (epoch 0) into a consumer group with those members as its
// classic members, and returns nil if the heartbeat goes on into it (it
// was converted, or had no members any more), else the error and message
// to answer it: GROUP_ID_NOT_FOUND for a group Kafka's
// validateOnlineUpgrade does not convert (the policy, the protocol type,
// more members than group.consumer.max.size), GROUP_MAX_SIZE_REACHED for
// one exactly at group.consumer.max.size, which Kafka converts and then
// finds full, and so leaves as it was (throwIfConsumerGroupIsFull).
func (s *Server) upgradeClassicGroup(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	switch s.cfg.GroupConsumerMigrationPolicy {
	case "bidirectional", "upgrade":
	default:
		return kerr.GroupIDNotFound, notConsumerGroup(req.Group)
	}
	if req.MemberEpoch != consumergroup.JoinEpoch {
		return kerr.GroupIDNotFound, notConsumerGroup(req.Group)
	}
	maxSize := s.cfg.GroupConsumerMaxSize
	msg := notConsumerGroup(req.Group)
	found, err := s.groups.ConvertToConsumer(req.Group, consumergroup.ClassicProtocolType, func(cv group.Conversion) *kerr.Error {
		switch n := len(cv.Members); {
		case n > maxSize:
			msg = "Cannot upgrade classic group " + req.Group +
				" to consumer group because the group size exceeds the consumer group maximum size."
			return kerr.GroupIDNotFound
		case n == maxSize && !slices.ContainsFunc(cv.Members, func(m group.ConvertedMember) bool { return m.MemberID == req.MemberID }):
			msg = fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", maxSize)
			return kerr.GroupMaxSizeReached
		}
		members := make([]consumergroup.ClassicGroupMember, len(cv.Members))
		for i, m := range cv.Members {
			cm := consumergroup.ClassicGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
				ClientHost: m.ClientHost, SessionTimeout: m.SessionTimeout, RebalanceTimeout: m.RebalanceTimeout,
				Assignment: m.Assignment}
			for _, p := range m.Protocols {
				cm.Protocols = append(cm.Protocols, consumergroup.ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
			}
			members[i] = cm
		}
		return s.consumers.FromClassic(cv.Group, cv.Generation, cv.Protocol, members)
	})
	if !found || err == nil {
		return nil, ""
	}
	if err != kerr.GroupMaxSizeReached {
		err = kerr.GroupIDNotFound
	}
	return err, msg
}

// classicGroupActive reports whether group is a classic group with
// members: a consumer member may not join it.
func (s *Server) classicGroupActive(group string) bool {
	d, found, err := s.groups.DescribeGroup(group)
	return err == nil && found && len(d.Members) > 0
}
