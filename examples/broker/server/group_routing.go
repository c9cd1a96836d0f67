package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// groupRouted wraps the handler of a group API that names one group: a
// broker that is not the group's coordinator (the leader of its offsets
// partition: coordinator.Topic.KeyError) answers NOT_COORDINATOR, which tells
// clients to find the coordinator again; one still loading the partition
// answers COORDINATOR_LOAD_IN_PROGRESS, which they retry, as a Kafka broker
// answers. The APIs that name several groups (DescribeGroups,
// DeleteGroups, OffsetFetch v8+) check each group themselves (KeyError).
func groupRouted(handle func(*Server, *kafkanet.Request)) func(*Server, *kafkanet.Request) {
	return func(s *Server, r *kafkanet.Request) {
		if id, ok := requestGroup(r.Msg); ok {
			if err := s.offsets.KeyError(id); err != nil {
				r.Respond(authz.ErrorResponse(r.Msg, err.Code))
				return
			}
		}
		handle(s, r)
	}
}

// requestGroup returns the one group req names; false for a request that
// names several (or none).
func requestGroup(req kmsg.Request) (string, bool) {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		return req.Group, true
	case *kmsg.SyncGroupRequest:
		return req.Group, true
	case *kmsg.HeartbeatRequest:
		return req.Group, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return req.Group, true
	case *kmsg.LeaveGroupRequest:
		return req.Group, true
	case *kmsg.OffsetCommitRequest:
		return req.Group, true
	case *kmsg.TxnOffsetCommitRequest:
		return req.Group, true
	case *kmsg.OffsetDeleteRequest:
		return req.Group, true
	case *kmsg.OffsetFetchRequest:
		return req.Group, req.Version < 8
	}
	return "", false
}

// notCoordinator returns req's response with NOT_COORDINATOR wherever the
// response carries an error: at the top, or for each group or partition
// the request names.
func notCoordinator(req kmsg.Request) kmsg.Response {
	return authz.ErrorResponse(req, kerr.NotCoordinator.Code)
}
