package server

// DescribeGroups: v0-v6.
//
// Each group's state, protocol type, and members (in join order) with
// their client ids and hosts; a Stable group also shows its protocol and
// each member's metadata and assignment, as Kafka does. A group that does
// not exist is Dead, and from v6 also GROUP_ID_NOT_FOUND (KIP-1043). v3
// can ask for the authorized operations (KIP-430): those of Kafka 4's
// group operations (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS,
// ALTER_CONFIGS) the client may do, all of them without an authorizer, as
// Kafka answers. v4 shows instance ids. A KIP-848 consumer group is Dead
// here, and from v6 GROUP_ID_NOT_FOUND, as Kafka 4 answers
// (ConsumerGroupDescribe describes it). A group the client may not
// DESCRIBE is GROUP_AUTHORIZATION_FAILED, before its coordinator is asked
// (authz.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeGroups, 0, 6, (*Server).handleDescribeGroups) }

func (s *Server) handleDescribeGroups(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c := s.access(r)
	for _, id := range req.Groups {
		var (
			d     group.Description
			found bool
		)
		err := s.offsets.KeyError(id) // each group at its own coordinator
		if !c.Allows(opDescribe, groupResource, id) {
			err = kerr.GroupAuthorizationFailed
		}
		consumer := err == nil && s.consumers.Has(id)
		if err == nil && !consumer {
			d, found, err = s.groups.DescribeGroup(id)
		}
		g := kmsg.NewDescribeGroupsResponseGroup()
		if consumer {
			// A KIP-848 group is not described here, as Kafka
			// answers: Dead, and from v6 GROUP_ID_NOT_FOUND;
			// ConsumerGroupDescribe describes it.
			g.Group, g.State = id, "Dead"
			if req.Version >= 6 {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				g.ErrorMessage = nilIfEmpty("Group " + id + " is not a classic group.")
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.Group, g.ErrorCode = id, group.Code(err)
		g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
		if err != nil {
			g.State = "" // Kafka's answer for a group it cannot describe
		}
		if !found && err == nil && req.Version >= 6 {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			g.ErrorMessage = nilIfEmpty("group " + id + " not found")
		}
		if req.IncludeAuthorizedOperations && err == nil {
			g.AuthorizedOperations = c.Operations(groupResource, id)
		}
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.InstanceID = m.MemberID, nilIfEmpty(m.InstanceID)
			gm.ClientID, gm.ClientHost = m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}
