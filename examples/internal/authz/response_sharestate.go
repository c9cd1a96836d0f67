package authz

import "github.com/twmb/franz-go/pkg/kmsg"

// shareStateErrorResponse is ErrorResponse for the share coordinator's
// RPCs (InitializeShareGroupState to ReadShareGroupStateSummary): code
// for every partition named. ok is false for any other API.
func shareStateErrorResponse(req kmsg.Request, code int16) (_ kmsg.Response, ok bool) {
	switch req := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, true
	case *kmsg.ReadShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ReadShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code, StartOffset: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, true
	case *kmsg.WriteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, true
	case *kmsg.DeleteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, true
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, true
	}
	return nil, false
}
