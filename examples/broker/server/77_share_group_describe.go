package server

// ShareGroupDescribe: v0-v1.
//
// Describes share groups (package sharegroup): their state (Empty or
// Stable), group and assignment epochs, the assignor ("simple") and each
// member's epoch, subscription and assignment, with each topic's name.
// A group this broker does not coordinate is NOT_COORDINATOR; an id that
// is no share group is GROUP_ID_NOT_FOUND, with Kafka's messages ("Group
// g is not a share group." for a classic or consumer group's id, "Group g
// not found." for one of no group).
//
// Authorization (authz.go): DESCRIBE on each group, else
// GROUP_AUTHORIZATION_FAILED for it. Authorized operations are not
// computed (include_authorized_operations is answered with none, -2147483648).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ShareGroupDescribe, 0, 1, (*Server).handleShareGroupDescribe) }

func (s *Server) handleShareGroupDescribe(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	c := s.access(r)
	im := s.image()
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		d, ok := s.share.groups.Describe(id)
		switch err := s.offsets.KeyError(id); {
		case err != nil:
			g.ErrorCode = err.Code
		case !c.Allows(opDescribe, groupResource, id):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !ok && s.groupExists(id):
			g.ErrorCode = kerr.GroupIDNotFound.Code
			g.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a share group.")
		case !ok:
			g.ErrorCode = kerr.GroupIDNotFound.Code
			g.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		default:
			g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.State, d.Epoch, d.TargetEpoch, "simple"
			for _, m := range d.Members {
				gm := kmsg.NewShareGroupDescribeResponseGroupMember()
				gm.MemberID, gm.MemberEpoch, gm.ClientID, gm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
				if m.Rack != "" {
					gm.RackID = kmsg.StringPtr(m.Rack)
				}
				gm.SubscribedTopicNames = m.Topics
				for _, tid := range sortedTopicIDs(m.Assignment) {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID, tp.Partitions = tid, m.Assignment[tid]
					if t, err := im.TopicByID(tid); err == nil {
						tp.Topic = t.Name
					}
					gm.Assignment.TopicPartitions = append(gm.Assignment.TopicPartitions, tp)
				}
				g.Members = append(g.Members, gm)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}
