package server

// DeleteGroups: v0-v3.
//
// Deletes Empty groups with their committed offsets; a group with members
// is NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND. Whatever
// still waits on a deleted group (a pending member's session, its offset
// expiration) completes. v3 adds an error message.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

func init() { serve(kmsg.DeleteGroups, 0, 3, coordinatorOnly((*Server).handleDeleteGroups)) }

func (s *Server) handleDeleteGroups(r *request) {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for i, err := range s.groups.DeleteGroups(req.Groups) {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = req.Groups[i], group.Code(err)
		if err != nil {
			g.ErrorMessage = nilIfEmpty(err.Description)
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.respond(resp)
}
