package server

// DeleteGroups: v0-v3.
//
// Deletes Empty groups with their committed offsets; a group with members
// is NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND. Whatever
// still waits on a deleted group (a pending member's session, its offset
// expiration) completes. A KIP-848 consumer group is deleted likewise,
// its members' state and its offsets. v3 adds an error message. A group the client may
// not DELETE is GROUP_AUTHORIZATION_FAILED, before its coordinator is
// asked (authz.go). A share group is deleted with its share partitions'
// state (share.go), on the same terms.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteGroups, 0, 3, (*Server).handleDeleteGroups) }

func (s *Server) handleDeleteGroups(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	c := s.access(r)
	for _, id := range req.Groups {
		err := s.offsets.KeyError(id) // each group at its own coordinator
		if !c.Allows(opDelete, groupResource, id) {
			err = kerr.GroupAuthorizationFailed
		}
		if err == nil {
			if share, shareErr := s.deleteShareGroup(id); share { // share.go
				err = shareErr
			} else {
				err = s.deleteGroup(id)
			}
		}
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = id, group.Code(err)
		if err != nil {
			g.ErrorMessage = nilIfEmpty(err.Description)
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}

// deleteGroup deletes a group: a KIP-848 consumer group with members is
// not (NON_EMPTY_GROUP); one without is forgotten, and its offsets, which
// the classic coordinator keeps, deleted with them; a consumer group
// with no offsets is deleted all the same.
func (s *Server) deleteGroup(id string) *kerr.Error {
	consumer := s.consumers.Has(id)
	if err := s.consumers.Delete([]string{id})[0]; err != nil {
		return err
	}
	err := s.groups.DeleteGroups([]string{id})[0]
	if consumer && err == kerr.GroupIDNotFound {
		return nil
	}
	return err
}
