package server

// DescribeShareGroupOffsets: v0-v1.
//
// Answers each share group's start offset (SPSO) on the partitions asked,
// or on every partition the group has state for when a group names no
// topics, with the lag (v1: here the high watermark less the start
// offset, the records in flight included; Kafka leaves out those
// acknowledged past the start). A partition the group never consumed is answered start offset
// -1. The coordinator answers from its own share partitions (package
// share) and, for a partition named that it does not hold, from the share
// coordinator (ReadShareGroupStateSummary, share_state.go): the state a
// restart or a leader elsewhere left there. A group that names no topics
// gets only the partitions held here (the group coordinator does not keep
// which partitions its share groups initialized, as Kafka's does).
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
	s.describeFromShareStates(resp, func() { r.Respond(resp) })
}

// describeFromShareStates asks the share coordinator for the start offset
// of each partition of resp not held here (start offset -1, no error), and
// calls then once every answer is in; a partition the coordinator cannot
// answer for stays -1.
func (s *Server) describeFromShareStates(resp *kmsg.DescribeShareGroupOffsetsResponse, then func()) {
	type missing struct {
		k  share.Key
		rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition
	}
	var ms []missing
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		for ti := range g.Topics {
			rt := &g.Topics[ti]
			for pi := range rt.Partitions {
				if rp := &rt.Partitions[pi]; rp.ErrorCode == 0 && rp.StartOffset < 0 && rt.TopicID != ([16]byte{}) {
					ms = append(ms, missing{share.Key{Group: g.GroupID, Topic: rt.TopicID, Partition: rp.Partition}, rp})
				}
			}
		}
	}
	done := countdown(len(ms), then)
	for _, m := range ms {
		s.share.persister.Summary(m.k, func(_ int32, start int64, err error) {
			if err == nil && start >= 0 {
				m.rp.StartOffset = start
				s.describeLag(m.k.Topic, m.rp)
			}
			done()
		})
	}
}

// describeSharePartition fills rp with group's state of a partition.
func (s *Server) describeSharePartition(group string, topic [16]byte, rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
	sp := s.share.parts.Get(share.Key{Group: group, Topic: topic, Partition: rp.Partition})
	if sp == nil {
		return
	}
	rp.StartOffset = sp.Start()
	s.describeLag(topic, rp)
}

// describeLag fills rp's leader epoch and lag, from its start offset and
// the partition's high watermark as this broker knows it.
func (s *Server) describeLag(topic [16]byte, rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
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
