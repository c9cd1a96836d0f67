package server

// ConsumerGroupDescribe: v0-v1 (KIP-848).
//
// Describes consumer groups: state (Empty, Assigning, Reconciling,
// Stable), group and assignment epochs, the assignor, and each member
// with its subscription, its current and its target assignment (topic
// ids with their names); v1 adds each member's type, always "consumer"
// (1) here. A group that is not a consumer group (a classic one, or none)
// is answered GROUP_ID_NOT_FOUND, as Kafka answers.
//
// Authorization (authz.go): DESCRIBE on each group, else
// GROUP_AUTHORIZATION_FAILED for it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ConsumerGroupDescribe, 0, 1, (*Server).handleConsumerGroupDescribe) }

// consumerMemberType is KIP-1099's member type of a member of the
// consumer protocol.
const consumerMemberType = 1

func (s *Server) handleConsumerGroupDescribe(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	c := s.access(r)
	topics := imageTopics{s.image()}
	for _, id := range req.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = id
		err := s.offsets.KeyError(id) // each group at its own coordinator
		if !c.Allows(opDescribe, groupResource, id) {
			err = kerr.GroupAuthorizationFailed
		}
		var d consumergroup.Description
		if err == nil {
			var found bool
			if d, found = s.consumers.Describe(id); !found {
				err = kerr.GroupIDNotFound
				g.ErrorMessage = nilIfEmpty("Group " + id + " not found.")
			}
		}
		g.ErrorCode = group.Code(err)
		if err != nil {
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = string(d.State), d.Epoch, d.AssignmentEpoch, d.Assignor
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = c.Operations(groupResource, id)
		}
		for _, m := range d.Members {
			gm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.RackID = m.MemberID, nilIfEmpty(m.InstanceID), nilIfEmpty(m.RackID)
			gm.MemberEpoch, gm.ClientID, gm.ClientHost = m.MemberEpoch, m.ClientID, m.ClientHost
			gm.SubscribedTopics, gm.SubscribedTopicRegex = m.SubscribedNames, nilIfEmpty(m.SubscribedRegex)
			gm.Assignment, gm.TargetAssignment = wireAssignment(topics, m.Assignment), wireAssignment(topics, m.Target)
			gm.MemberType = consumerMemberType
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}

// wireAssignment is a on the wire, each topic with its name (empty for
// one deleted since).
func wireAssignment(topics imageTopics, a consumergroup.Assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	for _, id := range a.Topics() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = id, a[id]
		if t, ok := topics.ByID(id); ok {
			tp.Topic = t.Name
		}
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
