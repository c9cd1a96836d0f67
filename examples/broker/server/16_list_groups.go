package server

// ListGroups: v0-v5.
//
// Every group with its protocol type; v4 adds each group's state and a
// filter on states (KIP-518, case-insensitive as in Kafka), v5 the group
// type, always "classic" here, and a filter on types (KIP-848). A client
// that may not DESCRIBE the cluster sees only the groups it may DESCRIBE
// (authz.go), as Kafka lists them.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ListGroups, 0, 5, (*Server).handleListGroups) }

func (s *Server) handleListGroups(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	listed, err := s.groups.ListGroups()
	resp.ErrorCode = group.Code(err)
	c := s.access(r)
	all := c.Sees(opDescribe, clusterRes, acl.ClusterName)
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, l := range listed {
		if !matches(req.StatesFilter, l.State.String()) || !matches(req.TypesFilter, "classic") ||
			!all && !c.Sees(opDescribe, groupResource, l.Group) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, l.ProtocolType, l.State.String(), "classic"
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}
