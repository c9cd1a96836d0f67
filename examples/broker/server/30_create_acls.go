package server

// CreateAcls: v1-v3.
//
// Creates ACL bindings, as Kafka's AclApis.handleCreateAcls and its
// controller's AclControlManager.createAcls: each creation is checked on
// its own (acl.Binding.Validate: a concrete resource type, operation and
// permission, a LITERAL or PREFIXED pattern, a name, kafka-cluster for the
// CLUSTER, and, beyond Kafka, which stores bindings that never match, a
// principal of the form Type:name and a host that is "*" or an IP
// address) and answered INVALID_REQUEST with a message when it fails; the
// others are committed to the metadata log in one record, which every
// broker's authorizer follows once applied. A binding that exists already,
// or is asked for twice, succeeds and is stored once. Kafka refuses a
// request holding an UNKNOWN enum by closing the connection; this broker
// answers that creation INVALID_REQUEST. v0 (LITERAL only) is not served,
// as Kafka 4 no longer serves it (KIP-896).
//
// Without an authorizer every creation is SECURITY_DISABLED, "No
// Authorizer is configured.", as Kafka answers; with one, the client
// needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
// creation, authz.go).
//
// The active controller commits; another broker forwards the request to it
// and relays its answer (atController), as Kafka 4's brokers do, for
// clients send CreateAcls to any broker. The answer comes once the record
// is committed and applied on the controller: another broker applies it a
// moment later.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.CreateACLs, 1, 3, (*Server).handleCreateACLs) }

// noAuthorizer is Kafka's message for the ACL APIs of a broker without an
// authorizer (SECURITY_DISABLED).
const noAuthorizer = "No Authorizer is configured."

func (s *Server) handleCreateACLs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	if s.authz == nil {
		r.Respond(securityDisabled(req))
		return
	}
	if s.atController(r) {
		return
	}
	bindings := make([]acl.Binding, len(req.Creations))
	for i, c := range req.Creations {
		bindings[i] = acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	errs, err := s.ctrl().CreateACLs(ctx, bindings)
	cancel()
	for i := range bindings {
		res := kmsg.NewCreateACLsResponseResult()
		switch {
		case err != nil:
			res.ErrorCode, res.ErrorMessage = controllerCode(err), errorMessage(err)
		case errs[i] != nil:
			res.ErrorCode, res.ErrorMessage = acl.Code(errs[i]), errorMessage(errs[i])
		}
		resp.Results = append(resp.Results, res)
	}
	r.Respond(resp)
}

// controllerCode is the code of a decision's failure: NOT_CONTROLLER
// when the controller lost its office meanwhile, which clients retry.
func controllerCode(err error) int16 {
	if errors.Is(err, controller.ErrNotController) {
		err = fmt.Errorf("%w: %w", errNotController, err)
	}
	return errorCode(err)
}

// securityDisabled is the answer of an ACL API on a broker without an
// authorizer: SECURITY_DISABLED wherever the response carries an error.
func securityDisabled(req kmsg.Request) kmsg.Response {
	resp := authz.ErrorResponse(req, kerr.SecurityDisabled.Code)
	msg := noAuthorizer
	switch resp := resp.(type) {
	case *kmsg.DescribeACLsResponse:
		resp.ErrorMessage = &msg
	case *kmsg.CreateACLsResponse:
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = &msg
		}
	case *kmsg.DeleteACLsResponse:
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = &msg
		}
	}
	return resp
}
