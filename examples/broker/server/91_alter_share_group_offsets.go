package server

// AlterShareGroupOffsets: v0.
//
// Sets a share group's start offset (SPSO) on partitions: their window
// starts there afresh, nothing in flight. The group must have no member
// (NON_EMPTY_GROUP otherwise); one that does not exist yet is made, empty,
// as Kafka makes it, so that a group's offsets can be set before it is
// first consumed. An id a classic or consumer group has is
// GROUP_ID_NOT_FOUND. Each partition must exist
// (UNKNOWN_TOPIC_OR_PARTITION).
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AlterShareGroupOffsets, 0, 0, (*Server).handleAlterShareGroupOffsets) }

func (s *Server) handleAlterShareGroupOffsets(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	c := s.access(r)
	resp.ErrorCode = s.emptyShareGroupCode(c, req.GroupID, opRead, true)
	if resp.ErrorCode != 0 {
		r.Respond(resp)
		return
	}
	im := s.image()
	for _, at := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = at.Topic
		t, err := im.Topic(at.Topic)
		if err == nil {
			rt.TopicID = t.ID
		}
		for _, ap := range at.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = ap.Partition
			switch {
			case !c.Allows(opRead, topicResource, at.Topic):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case err != nil || ap.Partition < 0 || int(ap.Partition) >= len(t.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				s.share.parts.Set(share.Key{Group: req.GroupID, Topic: t.ID, Partition: ap.Partition}, ap.StartOffset)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.Respond(resp)
}
