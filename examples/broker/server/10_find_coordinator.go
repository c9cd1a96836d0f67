package server

// FindCoordinator: v0-v6.
//
// The broker with the smallest id coordinates every group (cluster.go; a
// broker alone coordinates its own): a group key (type 0, the only type
// before v1) is answered with its node id, host and port; it first
// creates the offsets topic if it does not exist, as Kafka does (see
// offsets_topic.go), and should that fail, the key is answered
// COORDINATOR_NOT_AVAILABLE, which clients retry. Group requests sent to
// another broker of a cluster are answered NOT_COORDINATOR
// (group_routing.go). v4+ batches keys
// (KIP-699), each answered on its own.
// Transactions are out of scope: a transactional id (type 1) is answered
// INVALID_REQUEST with a message saying that this broker has no
// transaction coordinator, which clients report as a fatal error instead of
// retrying until a timeout (COORDINATOR_NOT_AVAILABLE would make them
// retry). Share groups (type 2, KIP-932) and unknown types are answered
// INVALID_REQUEST, as Kafka answers unknown types.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.FindCoordinator, 0, 6, (*Server).handleFindCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (s *Server) handleFindCoordinator(r *request) {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	var offsetsErr error
	if req.CoordinatorType == coordinatorGroup && s.cl.isGroupCoordinator() {
		offsetsErr = s.ensureOffsetsTopic(r)
	}
	coordinator, _ := s.cl.node(s.cl.groupCoordinator())
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch {
		case req.CoordinatorType == coordinatorGroup && offsetsErr != nil:
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
			c.ErrorMessage = errorMessage(offsetsErr)
		case req.CoordinatorType == coordinatorGroup:
			c.NodeID, c.Host, c.Port = coordinator.id, coordinator.host, coordinator.port
		case req.CoordinatorType == coordinatorTransaction:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = nilIfEmpty("this broker has no transaction coordinator: transactions are not supported")
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = nilIfEmpty("unsupported coordinator type")
		}
		if c.ErrorCode != 0 {
			c.NodeID, c.Port = -1, -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	r.respond(resp)
}
