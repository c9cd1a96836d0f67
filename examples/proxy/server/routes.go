package server

// Requests forwarded as they are, at the client's version, to the one
// upstream broker their route names, and answered with upstream's answer
// unchanged (none of them names a broker):
//
//	OffsetCommit, JoinGroup, Heartbeat,    the group's coordinator
//	LeaveGroup, SyncGroup, OffsetDelete,
//	TxnOffsetCommit,
//	ConsumerGroupHeartbeat (KIP-848),
//	AlterShareGroupOffsets,
//	DeleteShareGroupOffsets (KIP-932)
//	CreateTopics, DeleteTopics,            the controller
//	CreatePartitions
//	InitProducerID                         the transaction's coordinator,
//	                                       any broker without one
//	AddPartitionsToTxn (v0-v3),            the transaction's coordinator
//	AddOffsetsToTxn, EndTxn
//
// Each is served in every version upstream serves (and kmsg knows). A
// coordinator comes from the proxy's FindCoordinator cache, or is looked
// up first, while the connection's later requests wait, so that they
// reach upstream in the client's order; one that answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE
// is forgotten, and the error reaches the client, which finds its
// coordinator again through the proxy. A controller answering
// NOT_CONTROLLER, and every topic creation or deletion, refreshes the
// metadata. A forward that fails in transport closes the client's
// connection (route.go).
//
// The transaction routes are exercised by franz-go's TestTxnEtl through
// the proxy (make kgo-integration-proxy). AddPartitionsToTxn is routed in
// its client form only (v0-v3): v4+ batches transactions that may have
// different coordinators.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	const all = math.MaxInt16 // capped at kmsg's newest by serve
	group := func(key func(kmsg.Request) string) func(*Server, *request) {
		return byCoordinator(coordinatorGroup, key)
	}
	txn := func(key func(kmsg.Request) string) func(*Server, *request) {
		return byCoordinator(coordinatorTransaction, key)
	}
	serve(kmsg.OffsetCommit, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.OffsetCommitRequest).Group }))
	serve(kmsg.JoinGroup, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.JoinGroupRequest).Group }))
	serve(kmsg.Heartbeat, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.HeartbeatRequest).Group }))
	serve(kmsg.ConsumerGroupHeartbeat, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.ConsumerGroupHeartbeatRequest).Group }))
	serve(kmsg.LeaveGroup, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.LeaveGroupRequest).Group }))
	serve(kmsg.SyncGroup, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.SyncGroupRequest).Group }))
	serve(kmsg.OffsetDelete, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.OffsetDeleteRequest).Group }))
	serve(kmsg.TxnOffsetCommit, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.TxnOffsetCommitRequest).Group }))
	serve(kmsg.AlterShareGroupOffsets, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.AlterShareGroupOffsetsRequest).GroupID }))
	serve(kmsg.DeleteShareGroupOffsets, 0, all, group(func(q kmsg.Request) string { return q.(*kmsg.DeleteShareGroupOffsetsRequest).GroupID }))
	serve(kmsg.CreateTopics, 0, all, (*Server).toController)
	serve(kmsg.DeleteTopics, 0, all, (*Server).toController)
	serve(kmsg.CreatePartitions, 0, all, (*Server).toController)
	serve(kmsg.InitProducerID, 0, all, func(s *Server, r *request) {
		if r.Msg.(*kmsg.InitProducerIDRequest).TransactionalID == nil {
			r.forward(s.cl.Any(), r.Msg, nil) // an idempotent producer: any broker
			return
		}
		txn(func(q kmsg.Request) string { return *q.(*kmsg.InitProducerIDRequest).TransactionalID })(s, r)
	})
	serve(kmsg.AddPartitionsToTxn, 0, 3, txn(func(q kmsg.Request) string { return q.(*kmsg.AddPartitionsToTxnRequest).TransactionalID }))
	serve(kmsg.AddOffsetsToTxn, 0, all, txn(func(q kmsg.Request) string { return q.(*kmsg.AddOffsetsToTxnRequest).TransactionalID }))
	serve(kmsg.EndTxn, 0, all, txn(func(q kmsg.Request) string { return q.(*kmsg.EndTxnRequest).TransactionalID }))
	for key, c := range routeChecks { // authz_routes.go
		apis.Lookup(int16(key)).Handler.check = c
	}
}

// byCoordinator forwards a request to the coordinator of the key it names.
func byCoordinator(typ int8, key func(kmsg.Request) string) func(*Server, *request) {
	return func(s *Server, r *request) {
		k := key(r.Msg)
		s.coordinator(typ, k, func(node int32) {
			r.forward(node, r.Msg, func(resp kmsg.Response) {
				if staleCoordinator(coordinatorError(resp)) {
					s.cl.ForgetCoordinator(typ, k)
				}
			})
		})
	}
}

// coordinatorError returns the error code of a coordinator's answer that
// says whether it is the coordinator.
func coordinatorError(resp kmsg.Response) int16 {
	switch m := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return m.ErrorCode
	case *kmsg.SyncGroupResponse:
		return m.ErrorCode
	case *kmsg.HeartbeatResponse:
		return m.ErrorCode
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return m.ErrorCode
	case *kmsg.ShareGroupHeartbeatResponse:
		return m.ErrorCode
	case *kmsg.AlterShareGroupOffsetsResponse:
		return m.ErrorCode
	case *kmsg.DeleteShareGroupOffsetsResponse:
		return m.ErrorCode
	case *kmsg.LeaveGroupResponse:
		return m.ErrorCode
	case *kmsg.OffsetDeleteResponse:
		return m.ErrorCode
	case *kmsg.InitProducerIDResponse:
		return m.ErrorCode
	case *kmsg.AddOffsetsToTxnResponse:
		return m.ErrorCode
	case *kmsg.EndTxnResponse:
		return m.ErrorCode
	case *kmsg.OffsetCommitResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if staleCoordinator(p.ErrorCode) {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if staleCoordinator(p.ErrorCode) {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.AddPartitionsToTxnResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if staleCoordinator(p.ErrorCode) {
					return p.ErrorCode
				}
			}
		}
	}
	return 0
}

// toController forwards a request to the controller. The metadata is
// refreshed after every answer: the request created, deleted or grew
// topics, or the broker was not the controller (NOT_CONTROLLER).
func (s *Server) toController(r *request) {
	r.forward(s.controller(), r.Msg, func(kmsg.Response) { s.cl.Refresh() })
}
