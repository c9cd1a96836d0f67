package server

// ShareGroupHeartbeat: v0-v1.
//
// Joins (member epoch 0), keeps alive, and removes (epoch -1) a member of
// a share group (KIP-932), answering its epoch and, when it changed, its
// assignment by topic id (package sharegroup), and the heartbeat
// interval: the group's share.heartbeat.interval.ms, or the broker's
// group.share.heartbeat.interval.ms. From v1 the member makes
// its own id (KIP-1082): a join without one is INVALID_REQUEST; before,
// the coordinator makes one. A member that leaves, or whose session
// expires, has its share session dropped and the records it acquired on
// this broker released. A group with group.share.max.size members
// answers any other member GROUP_MAX_SIZE_REACHED.
//
// A share group's id is in the group coordinator's keyspace: the request
// goes to the coordinator of the group's __consumer_offsets partition
// (NOT_COORDINATOR elsewhere), and an id a classic or consumer group has
// is GROUP_ID_NOT_FOUND, as Kafka answers a heartbeat to a group of
// another type.
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; DESCRIBE on each subscribed topic, else
// TOPIC_AUTHORIZATION_FAILED.
//
// A heartbeat that changes the group (a join, a leave, a new subscription,
// a member taking a new assignment) is answered once the change is durable
// in the group's __consumer_offsets partition, where a coordinator that
// takes the group over finds it (package sharegroup's store, in package
// group/records' format): members go on there at their ids and epochs.
//
// Not implemented: regular-expression subscriptions (v1 has none).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ShareGroupHeartbeat, 0, 1, (*Server).handleShareGroupHeartbeat) }

func (s *Server) handleShareGroupHeartbeat(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(err error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		r.Respond(resp)
	}
	if err := s.offsets.KeyError(req.GroupID); err != nil {
		fail(err)
		return
	}
	c := s.access(r)
	if !c.Allows(opRead, groupResource, req.GroupID) {
		fail(kerr.GroupAuthorizationFailed)
		return
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.Allows(opDescribe, topicResource, t) {
			fail(kerr.TopicAuthorizationFailed)
			return
		}
	}
	// The check of the other types and a join, which may create the
	// group, are one step (group_types.go).
	defer s.groupTypes.lock(req.GroupID)()
	switch {
	case req.Version >= 1 && req.MemberID == "":
		fail(errors.Join(errInvalidRequest, errors.New("MemberId can't be empty.")))
		return
	case s.groupExists(req.GroupID):
		// Kafka's message alone, as getOrMaybeCreateShareGroup's.
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = nilIfEmpty("Group " + req.GroupID + " is not a share group.")
		r.Respond(resp)
		return
	}
	// Answered once the heartbeat's change of the group is durable in
	// __consumer_offsets (sharegroup.Config.Store), from the goroutine
	// that ends its wait.
	s.share.groups.Heartbeat(sharegroup.HeartbeatRequest{Group: req.GroupID, MemberID: req.MemberID,
		Epoch: req.MemberEpoch, Rack: req.RackID, Topics: req.SubscribedTopicNames,
		ClientID: r.ClientID, ClientHost: clientHost(r)}, func(hb sharegroup.HeartbeatResponse, err error) {
		if err != nil {
			fail(err)
			return
		}
		resp.MemberID, resp.MemberEpoch = &hb.MemberID, hb.Epoch
		resp.HeartbeatIntervalMillis = int32(hb.HeartbeatInterval.Milliseconds())
		if hb.Assignment != nil {
			a := kmsg.NewShareGroupHeartbeatResponseAssignment()
			for _, id := range sortedTopicIDs(hb.Assignment) {
				tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
				tp.TopicID, tp.Partitions = id, hb.Assignment[id]
				a.TopicPartitions = append(a.TopicPartitions, tp)
			}
			resp.Assignment = &a
		}
		r.Respond(resp)
	})
}
