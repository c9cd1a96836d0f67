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
// answers (group_types.go).
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED. The topics of a subscription are not
// checked against the principal (Kafka 4 leaves out of a regular
// expression's topics those it may not DESCRIBE).

import (
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
	if s.share.groups.Exists(req.Group) || s.classicGroupActive(req.Group) && !s.upgradeClassicGroup(req) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = nilIfEmpty("Group " + req.Group + " is not a consumer group.")
		r.Respond(resp)
		return
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
	cg, ok := s.consumers.ToClassic(id)
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

// upgradeClassicGroup converts the classic group with members that a
// member joins (epoch 0) into a consumer group with those members as its
// classic members, and reports whether the heartbeat goes on into it: it
// was converted, or had no members any more.
func (s *Server) upgradeClassicGroup(req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	switch s.cfg.GroupConsumerMigrationPolicy {
	case "bidirectional", "upgrade":
	default:
		return false
	}
	if req.MemberEpoch != consumergroup.JoinEpoch {
		return false
	}
	found, err := s.groups.ConvertToConsumer(req.Group, consumergroup.ClassicProtocolType, func(cv group.Conversion) *kerr.Error {
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
	return !found || err == nil
}

// classicGroupActive reports whether group is a classic group with
// members: a consumer member may not join it.
func (s *Server) classicGroupActive(group string) bool {
	d, found, err := s.groups.DescribeGroup(group)
	return err == nil && found && len(d.Members) > 0
}
