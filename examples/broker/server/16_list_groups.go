package server

// ListGroups: v0-v5.
//
// Every group with its protocol type; v4 adds each group's state and a
// filter on states (KIP-518, case-insensitive as in Kafka), v5 the group
// type, "classic" or "consumer" (KIP-848's groups, protocol type
// "consumer", in their own states: Empty, Assigning, Reconciling,
// Stable), or "share" (KIP-932's, protocol type "share", Empty or
// Stable), and a filter on types. A client
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
	add := func(id, protocolType, state, typ string) {
		if !matches(req.StatesFilter, state) || !matches(req.TypesFilter, typ) ||
			!all && !c.Sees(opDescribe, groupResource, id) {
			return
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = id, protocolType, state, typ
		resp.Groups = append(resp.Groups, g)
	}
	for _, l := range listed {
		// A consumer group's offsets are kept by the classic
		// coordinator in an empty group of its name: the group is the
		// consumer group.
		if !s.consumers.Has(l.Group) {
			add(l.Group, l.ProtocolType, l.State.String(), "classic")
		}
	}
	for _, l := range s.consumers.List() {
		add(l.Group, "consumer", string(l.State), "consumer")
	}
	for _, id := range s.share.groups.Groups() {
		if d, ok := s.share.groups.Describe(id); ok {
			add(id, "share", d.State, "share")
		}
	}
	r.Respond(resp)
}
