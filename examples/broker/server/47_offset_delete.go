package server

// OffsetDelete: v0.
//
// Deletes a group's committed offsets (KIP-496): all of an Empty group's;
// of a consumer group with members, those of topics none of them
// subscribes to (the others are GROUP_SUBSCRIBED_TO_TOPIC), read from the
// members' subscriptions; any other group with members is NON_EMPTY_GROUP.
// A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION once the broker
// knows its topics (Server.topicExists). A share group's id is
// GROUP_ID_NOT_FOUND (Kafka's ShareGroup.validateOffsetDelete: its offsets
// are deleted with DeleteShareGroupOffsets).
//
// Authorization (authz.go): DELETE on the group (else
// GROUP_AUTHORIZATION_FAILED, alone), READ on each topic (else
// TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.OffsetDelete, 0, 0, groupRouted((*Server).handleOffsetDelete)) }

func (s *Server) handleOffsetDelete(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	var (
		tps     []group.TopicPartition
		deleted []*kmsg.OffsetDeleteResponseTopicPartition // the coordinator's answers, at tps[i]
	)
	c := s.access(r)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		denied := c.TopicCode(opRead, t.Topic)
		for i, p := range t.Partitions {
			rt.Partitions[i] = kmsg.NewOffsetDeleteResponseTopicPartition()
			rt.Partitions[i].Partition = p.Partition
			if code := s.partitionCode(denied, t.Topic, p.Partition); code != 0 {
				rt.Partitions[i].ErrorCode = code
				continue
			}
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			deleted = append(deleted, &rt.Partitions[i])
		}
	}
	gerr := s.notShareGroup(req.Group)
	var errs []*kerr.Error
	if gerr == nil {
		gerr, errs = s.groups.DeleteOffsets(req.Group, tps)
	}
	resp.ErrorCode = group.Code(gerr)
	if gerr != nil {
		resp.Topics = nil // Kafka answers a group error alone
	}
	for i, err := range errs {
		deleted[i].ErrorCode = group.Code(err)
	}
	r.Respond(resp)
}
