package server

// DescribeShareGroupOffsets: v0-v1.
//
// Answers each share group's start offset (SPSO) on the partitions asked,
// or on every partition the group has state for when a group names no
// topics, with the lag (v1: here the high watermark less the start
// offset, the records in flight included; Kafka leaves out those
// acknowledged past the start). A partition the group never consumed is answered start offset
// -1. The coordinator answers from its own share partitions (package
// share): with one broker, every partition's; in a cluster, those of the
// partitions it leads (it does not yet ask the share coordinator,
// ReadShareGroupStateSummary, for the others).
//
// Authorization (authz.go): DESCRIBE on the group, else
// GROUP_AUTHORIZATION_FAILED; DESCRIBE on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeShareGroupOffsets, 0, 1, (*Server).handleDescribeShareGroupOffsets) }

func (s *Server) handleDescribeShareGroupOffsets(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	c := s.access(r)
	im := s.image()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if err := s.offsets.KeyError(rg.GroupID); err != nil {
			g.ErrorCode = err.Code
		} else if !c.Allows(opDescribe, groupResource, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		}
		if g.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, g)
			continue
		}
		asked := rg.Topics
		if asked == nil { // every partition the group has state for
			byTopic := make(map[string][]int32)
			for _, sp := range s.share.parts.Of(rg.GroupID) {
				k := sp.Key()
				if t, err := im.TopicByID(k.Topic); err == nil {
					byTopic[t.Name] = append(byTopic[t.Name], k.Partition)
				}
			}
			for name, ps := range byTopic {
				slices.Sort(ps)
				asked = append(asked, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
			}
		}
		for _, at := range asked {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = at.Topic
			t, err := im.Topic(at.Topic)
			code := int16(0)
			switch {
			case !c.Allows(opDescribe, topicResource, at.Topic):
				code = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				code = kerr.UnknownTopicOrPartition.Code
			default:
				rt.TopicID = t.ID
			}
			for _, p := range at.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, code, -1, -1, -1
				if code == 0 {
					s.describeSharePartition(rg.GroupID, rt.TopicID, &rp)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			g.Topics = append(g.Topics, rt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	r.Respond(resp)
}

// describeSharePartition fills rp with group's state of a partition.
func (s *Server) describeSharePartition(group string, topic [16]byte, rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
	sp := s.share.parts.Get(share.Key{Group: group, Topic: topic, Partition: rp.Partition})
	if sp == nil {
		return
	}
	rp.StartOffset = sp.Start()
	t, err := s.replicas.Store().TopicByID(topic)
	if err != nil {
		return
	}
	p, err := t.Partition(rp.Partition)
	if err != nil {
		return
	}
	rp.LeaderEpoch = p.LeaderEpoch()
	if offs, err := p.Offsets(); err == nil {
		rp.Lag = max(0, offs.HighWatermark-rp.StartOffset)
	}
}
