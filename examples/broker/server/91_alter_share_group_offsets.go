package server

// AlterShareGroupOffsets: v0.
//
// Sets a share group's start offset (SPSO) on partitions: their window
// starts there afresh, nothing in flight. The group must have no member
// (NON_EMPTY_GROUP otherwise); one that does not exist yet is made, empty,
// as Kafka makes it, so that a group's offsets can be set before it is
// first consumed. An id a classic or consumer group has is
// GROUP_ID_NOT_FOUND. Each partition must exist
// (UNKNOWN_TOPIC_OR_PARTITION). The new start offset is written at the
// share coordinator at the partition's next state epoch (share_state.go),
// which fences the writes of the old window, and answered once durable;
// a share partition a leader elsewhere holds in memory keeps its window
// until its next write is fenced.
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
	type reset struct {
		k     share.Key
		start int64
		code  *int16
	}
	var resets []reset
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
				k := share.Key{Group: req.GroupID, Topic: t.ID, Partition: ap.Partition}
				s.share.parts.Set(k, ap.StartOffset)
				resets = append(resets, reset{k: k, start: ap.StartOffset})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// The answers' codes are placed now that the slices no longer grow.
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if i < len(resets) && resp.Topics[ti].Partitions[pi].ErrorCode == 0 {
				resets[i].code = &resp.Topics[ti].Partitions[pi].ErrorCode
				i++
			}
		}
	}
	done := countdown(len(resets), func() { r.Respond(resp) })
	for _, rs := range resets {
		s.share.persister.Reset(rs.k, rs.start, func(err error) {
			*rs.code = persistCode(err)
			done()
		})
	}
}
