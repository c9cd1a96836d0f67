package server

// OffsetFetch: v1-v9.
//
// Returns a group's committed offsets (-1 where none), whatever the group's
// state, as Kafka does: simple consumers keep offsets in groups they never
// join. v2+ fetches every committed offset when the topics are null and
// carries a top-level error; v5 returns the leader epoch; v7 adds
// require_stable (KIP-447): a partition with a commit pending, one of an
// open transaction (TxnOffsetCommit) or one not yet replicated, is
// answered UNSTABLE_OFFSET_COMMIT with offset -1, which the client
// retries, per partition and never for the group, as Kafka answers (in
// v8's groups too); without it, the committed offset, not the pending
// one; v8 fetches for several groups at once (KIP-709);
// v9's member id and epoch belong to the new consumer protocol (KIP-848):
// for a consumer group, a member named must be the group's
// (UNKNOWN_MEMBER_ID) at its current epoch (STALE_MEMBER_EPOCH), the
// group's error; a fetch without a member is the admin's, taken; they are
// ignored for classic groups, as Kafka ignores them. v10 (topic ids)
// is not served. A share group's id is GROUP_ID_NOT_FOUND, the group's
// error alone (each partition named before v2), as Kafka's
// ShareGroup.validateOffsetFetch answers: its offsets are its share
// partitions' state (DescribeShareGroupOffsets).
//
// Authorization (authz.go): DESCRIBE on the group (else
// GROUP_AUTHORIZATION_FAILED: the top-level error before v8, the group's
// from v8), DESCRIBE on each topic: a topic named that the client may not
// describe is answered TOPIC_AUTHORIZATION_FAILED for its partitions
// (offset -1), and left out of an answer for every committed offset, as
// Kafka answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.OffsetFetch, 1, 9, groupRouted((*Server).handleOffsetFetch)) }

func (s *Server) handleOffsetFetch(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	c := s.access(r)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			var tps []group.TopicPartition
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			var fetched []fetchedTopic
			err := s.offsets.KeyError(g.Group) // each group at its own coordinator
			if !c.Allows(opDescribe, groupResource, g.Group) {
				err = kerr.GroupAuthorizationFailed
			}
			if err == nil {
				err = s.notShareGroup(g.Group)
			}
			if err == nil && req.Version >= 9 {
				// A consumer group's member must be at its epoch.
				if _, refused := s.consumers.ValidateFetch(g.Group, orEmpty(g.MemberID), g.MemberEpoch); refused != nil {
					err = refused
				}
			}
			if err == nil {
				fetched, err = s.fetchOffsets(c, g.Group, tps, g.Topics == nil, req.RequireStable)
			}
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, group.Code(err)
			for _, ft := range fetched {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = ft.topic
				for _, o := range ft.partitions {
					p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = o.Partition, o.Offset, o.LeaderEpoch, &o.Metadata
					p.ErrorCode = group.Code(o.Err)
					rt.Partitions = append(rt.Partitions, p)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		r.Respond(resp)
		return
	}

	var tps []group.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	var (
		fetched []fetchedTopic
		err     *kerr.Error
	)
	if err = s.notShareGroup(req.Group); err != nil {
		for _, t := range req.Topics { // each partition named answers it before v2
			ft := fetchedTopic{topic: t.Topic}
			for _, p := range t.Partitions {
				ft.partitions = append(ft.partitions, group.PartitionOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1})
			}
			fetched = append(fetched, ft)
		}
		if req.Version >= 2 {
			fetched = nil // the group's error alone, as Kafka answers it
		}
	} else {
		fetched, err = s.fetchOffsets(c, req.Group, tps, req.Version >= 2 && req.Topics == nil, req.RequireStable)
	}
	if req.Version >= 2 {
		resp.ErrorCode = group.Code(err)
	}
	for _, ft := range fetched {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.topic
		for _, o := range ft.partitions {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = o.Partition, o.Offset, o.LeaderEpoch, &o.Metadata
			p.ErrorCode = group.Code(o.Err)
			if req.Version < 2 && err != nil {
				p.ErrorCode = group.Code(err) // no top-level error before v2
			}
			rt.Partitions = append(rt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.Respond(resp)
}

// fetchedTopic is one topic's offsets, whichever the version.
type fetchedTopic struct {
	topic      string
	partitions []group.PartitionOffset
}

// fetchOffsets returns the offsets of tps (or, with all, every committed
// one), grouped by topic in the order asked; with requireStable, those
// with a commit pending carry UNSTABLE_OFFSET_COMMIT. A topic the client
// may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED when named, left out of
// all.
func (s *Server) fetchOffsets(c access, g string, tps []group.TopicPartition, all, requireStable bool) ([]fetchedTopic, *kerr.Error) {
	var (
		offsets []group.PartitionOffset
		err     *kerr.Error
	)
	if all {
		offsets, err = s.groups.FetchAllOffsets(g, requireStable)
		if c.On() {
			var seen []group.PartitionOffset
			for _, o := range offsets {
				if c.Sees(opDescribe, topicResource, o.Topic) {
					seen = append(seen, o)
				}
			}
			offsets = seen
		}
	} else {
		offsets, err = s.fetchNamedOffsets(c, g, tps, requireStable)
	}
	var out []fetchedTopic
	for _, o := range offsets {
		if len(out) == 0 || out[len(out)-1].topic != o.Topic {
			out = append(out, fetchedTopic{topic: o.Topic})
		}
		last := &out[len(out)-1]
		last.partitions = append(last.partitions, o)
	}
	return out, err
}

// fetchNamedOffsets returns the offsets of tps, in order, those of the
// topics the client may not DESCRIBE answered TOPIC_AUTHORIZATION_FAILED
// without asking the coordinator.
func (s *Server) fetchNamedOffsets(c access, g string, tps []group.TopicPartition, requireStable bool) ([]group.PartitionOffset, *kerr.Error) {
	if !c.On() {
		return s.groups.FetchOffsets(g, tps, requireStable)
	}
	allowed := make(map[string]bool) // by topic, each checked once
	var asked []group.TopicPartition
	for _, tp := range tps {
		ok, checked := allowed[tp.Topic]
		if !checked {
			ok = c.Allows(opDescribe, topicResource, tp.Topic)
			allowed[tp.Topic] = ok
		}
		if ok {
			asked = append(asked, tp)
		}
	}
	fetched, err := s.groups.FetchOffsets(g, asked, requireStable)
	if err != nil || len(fetched) != len(asked) {
		return fetched, err
	}
	out := make([]group.PartitionOffset, 0, len(tps))
	for _, tp := range tps {
		if allowed[tp.Topic] {
			out = append(out, fetched[0])
			fetched = fetched[1:]
			continue
		}
		out = append(out, group.PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1,
			Err: kerr.TopicAuthorizationFailed})
	}
	return out, nil
}
