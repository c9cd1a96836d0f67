package server

// DescribeAcls: v1-v3.
//
// Describes the ACL bindings a filter selects (acl.Filter, as Kafka's
// AclBindingFilter: ANY and null fields match everything, pattern type
// MATCH selects every binding that applies to a name, KIP-290), from this
// broker's authorizer, which holds the bindings of the metadata log as
// this broker applied it: grouped by resource pattern, in
// acl.Authorizer.Describe's order. An invalid filter (an UNKNOWN enum,
// which Kafka refuses by closing the connection) is INVALID_REQUEST. v0
// is not served, as Kafka 4 no longer serves it (KIP-896).
//
// Without an authorizer: SECURITY_DISABLED, "No Authorizer is
// configured.", as Kafka answers; with one, the client needs DESCRIBE on
// the cluster (CLUSTER_AUTHORIZATION_FAILED, authz.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeACLs, 1, 3, (*Server).handleDescribeACLs) }

func (s *Server) handleDescribeACLs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.authz == nil {
		r.Respond(securityDisabled(req))
		return
	}
	bindings, err := s.authz.Describe(acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName,
		PatternType: req.ResourcePatternType, Principal: req.Principal, Host: req.Host, Operation: req.Operation,
		Permission: req.PermissionType})
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = acl.Code(err), errorMessage(err)
		r.Respond(resp)
		return
	}
	for _, b := range bindings {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != b.ResourceType || resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	r.Respond(resp)
}
