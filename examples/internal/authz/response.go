package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse returns req's response with code wherever it carries an
// error (Kafka's AbstractRequest.getErrorResponse): at the top, or for
// each partition, group, key, transaction, user, creation or filter the
// request names. It knows the APIs Gate checks, the group APIs and
// FindCoordinator, and CreatePartitions, AlterConfigs and
// IncrementalAlterConfigs (which brokers forward to their controller);
// any other API's response is returned empty.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch resp := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, rt := range req.(*kmsg.ProduceRequest).Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, code, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.InitProducerIDResponse:
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	case *kmsg.AddPartitionsToTxnResponse:
		a := req.(*kmsg.AddPartitionsToTxnRequest)
		if a.Version >= 4 {
			resp.ErrorCode = code
			break
		}
		for _, rt := range a.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.AddOffsetsToTxnResponse:
		resp.ErrorCode = code
	case *kmsg.EndTxnResponse:
		resp.ErrorCode = code
	case *kmsg.WriteTxnMarkersResponse:
		for _, rm := range req.(*kmsg.WriteTxnMarkersRequest).Markers {
			sm := kmsg.NewWriteTxnMarkersResponseMarker()
			sm.ProducerID = rm.ProducerID
			for _, rt := range rm.Topics {
				st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					sp.Partition, sp.ErrorCode = p, code
					st.Partitions = append(st.Partitions, sp)
				}
				sm.Topics = append(sm.Topics, st)
			}
			resp.Markers = append(resp.Markers, sm)
		}
	case *kmsg.AlterPartitionResponse:
		resp.ErrorCode = code
	case *kmsg.BrokerRegistrationResponse:
		resp.ErrorCode, resp.BrokerEpoch = code, -1
	case *kmsg.BrokerHeartbeatResponse:
		resp.ErrorCode, resp.IsFenced = code, true
	case *kmsg.DescribeClientQuotasResponse:
		resp.ErrorCode = code
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range req.(*kmsg.AlterClientQuotasRequest).Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = code
			for _, p := range e.Entity {
				re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			}
			resp.Entries = append(resp.Entries, re)
		}
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		resp.ErrorCode = code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		a := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		seen := make(map[string]bool)
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = user, code
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range a.Deletions {
			add(d.Name)
		}
		for _, u := range a.Upsertions {
			add(u.Name)
		}
	case *kmsg.ElectLeadersResponse:
		resp.ErrorCode = code // v1+; v0's are the partitions'
		for _, rt := range req.(*kmsg.ElectLeadersRequest).Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		resp.ErrorCode = code
		for _, rt := range req.(*kmsg.AlterPartitionAssignmentsRequest).Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		resp.ErrorCode = code
	case *kmsg.CreatePartitionsResponse:
		for _, rt := range req.(*kmsg.CreatePartitionsRequest).Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.AlterConfigsResponse:
		for _, rr := range req.(*kmsg.AlterConfigsRequest).Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, sr)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, rr := range req.(*kmsg.IncrementalAlterConfigsRequest).Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, sr)
		}
	case *kmsg.DescribeACLsResponse:
		resp.ErrorCode = code
	case *kmsg.CreateACLsResponse:
		for range req.(*kmsg.CreateACLsRequest).Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
	case *kmsg.DeleteACLsResponse:
		for range req.(*kmsg.DeleteACLsRequest).Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
	default:
		if resp, ok := shareStateErrorResponse(req, code); ok {
			return resp
		}
		return groupErrorResponse(req, code)
	}
	return resp
}

// groupErrorResponse is ErrorResponse for the group APIs and
// FindCoordinator.
func groupErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch resp := resp.(type) {
	case *kmsg.JoinGroupResponse:
		resp.ErrorCode = code
	case *kmsg.SyncGroupResponse:
		resp.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		resp.ErrorCode = code
	case *kmsg.ConsumerGroupHeartbeatResponse:
		resp.ErrorCode = code
	case *kmsg.ConsumerGroupDescribeResponse:
		for _, g := range req.(*kmsg.ConsumerGroupDescribeRequest).Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
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
