package server

// DeleteAcls: v1-v3.
//
// Deletes the ACL bindings each filter selects, as Kafka's
// AclApis.handleDeleteAcls and AclControlManager.deleteAcls: a filter is
// checked on its own (acl.Filter.Validate: no UNKNOWN, ANY and MATCH
// allowed, names matched exactly) and answered INVALID_REQUEST when it
// fails; the active controller matches the others against its image and
// commits the removal of every binding they select in one record, naming
// each, so that every broker removes the same bindings. Each filter's
// result lists the bindings it matched, in acl.Authorizer.Describe's
// order; a binding two filters match is in both results. v0 is not
// served, as Kafka 4 no longer serves it (KIP-896).
//
// As CreateAcls: SECURITY_DISABLED for every filter without an
// authorizer, ALTER on the cluster needed with one
// (CLUSTER_AUTHORIZATION_FAILED), and a broker that is not the active
// controller forwards the request to it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteACLs, 1, 3, (*Server).handleDeleteACLs) }

func (s *Server) handleDeleteACLs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	if s.authz == nil {
		r.Respond(securityDisabled(req))
		return
	}
	if s.atController(r) {
		return
	}
	filters := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	deleted, err := s.ctrl().DeleteACLs(ctx, filters)
	cancel()
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		switch {
		case err != nil:
			res.ErrorCode, res.ErrorMessage = controllerCode(err), errorMessage(err)
		case deleted[i].Err != nil:
			res.ErrorCode, res.ErrorMessage = acl.Code(deleted[i].Err), errorMessage(deleted[i].Err)
		default:
			for _, b := range deleted[i].Bindings {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	r.Respond(resp)
}
