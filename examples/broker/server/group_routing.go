package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorOnly wraps the handler of a group API: in a cluster, a broker
// other than the group coordinator (the smallest id, cluster.go)
// coordinates no group (FindCoordinator names it for every group), and
// answers the request
// NOT_COORDINATOR, which tells clients to find the coordinator again, as a
// Kafka broker answers for a group it does not own.
func coordinatorOnly(handle func(*Server, *request)) func(*Server, *request) {
	return func(s *Server, r *request) {
		if s.cl.isGroupCoordinator() {
			handle(s, r)
			return
		}
		r.respond(notCoordinator(r.kreq))
	}
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
