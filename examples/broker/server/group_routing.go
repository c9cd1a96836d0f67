package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
				r.Respond(groupErrorResponse(r.Msg, err.Code))
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
	return groupErrorResponse(req, kerr.NotCoordinator.Code)
}

// groupErrorResponse returns the response of req, a group API's request,
// with code wherever the response carries an error.
func groupErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch resp := resp.(type) {
	case *kmsg.JoinGroupResponse:
		resp.ErrorCode = code
	case *kmsg.SyncGroupResponse:
		resp.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		resp.ErrorCode = code
	case *kmsg.LeaveGroupResponse:
		resp.ErrorCode = code
	case *kmsg.OffsetDeleteResponse:
		resp.ErrorCode = code
	case *kmsg.OffsetCommitResponse:
		for _, rt := range req.(*kmsg.OffsetCommitRequest).Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.TxnOffsetCommitResponse:
		tr := req.(*kmsg.TxnOffsetCommitRequest)
		if tr.Version < 2 && code == kerr.CoordinatorLoadInProgress.Code {
			// Clients before 2.0 (KAFKA-7296) do not retry it.
			code = kerr.CoordinatorNotAvailable.Code
		}
		for _, rt := range tr.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.OffsetFetchResponse:
		fr := req.(*kmsg.OffsetFetchRequest)
		resp.ErrorCode = code         // v2 to v7
		for _, g := range fr.Groups { // v8+
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
		}
		if fr.Version < 2 { // no top-level code: each partition carries it
			for _, rt := range fr.Topics {
				st := kmsg.NewOffsetFetchResponseTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewOffsetFetchResponseTopicPartition()
					sp.Partition, sp.Offset, sp.ErrorCode = p, -1, code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range req.(*kmsg.DescribeGroupsRequest).Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range req.(*kmsg.DeleteGroupsRequest).Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
	case *kmsg.FindCoordinatorResponse:
		fr := req.(*kmsg.FindCoordinatorRequest)
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1 // v0 to v3
		for _, key := range fr.CoordinatorKeys {              // v4+
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = key, code, -1, -1
			resp.Coordinators = append(resp.Coordinators, c)
		}
	}
	return resp
}
