package server

// OffsetCommit: v1-v9.
//
// Commits offsets to a group (package group checks the member and its
// generation; a commit with generation -1 and no member id is a simple
// consumer's, taken while the group is Empty). A commit to a partition that
// does not exist is answered UNKNOWN_TOPIC_OR_PARTITION once the broker
// knows its topics (Server.topicExists); until then it is taken. v2-v4's
// retention time sets an explicit expiry; v1's per-partition commit
// timestamp is ignored (the commit time is the broker's). v6 carries the
// leader epoch, returned by OffsetFetch; v7 static members' instance ids;
// v9 a KIP-848 consumer group member's id and epoch (the generation):
// UNKNOWN_MEMBER_ID for a member the group does not have; at an epoch
// older than its current one, STALE_MEMBER_EPOCH for the partitions it
// did not hold then (KIP-1251, Kafka 4.3), at a newer one for all; a
// commit without a member is taken while the group has none. A share
// group's id is GROUP_ID_NOT_FOUND for every partition, as in Kafka
// (group_types.go).
// v0 (offsets in ZooKeeper) and v10 (topic ids instead of names) are not
// served; v10 needs the data path's topic ids.
//
// A commit is a record of the group's partition of __consumer_offsets: it
// is answered once that record is below the partition's high watermark,
// waiting in the Produce purgatory as an acks=all produce does, for at
// most offsets.commit.timeout.ms (COORDINATOR_NOT_AVAILABLE past it, as
// Kafka 4 answers a write that timed out, which clients retry); the
// committed offsets are visible to OffsetFetch only then (package
// group/service, on the coordinator runtime).
//
// Authorization (authz.go): READ on the group (else
// GROUP_AUTHORIZATION_FAILED for every partition), and READ on each topic
// (else TOPIC_AUTHORIZATION_FAILED for its partitions, before the
// partition's existence is checked).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.OffsetCommit, 1, 9, groupRouted((*Server).handleOffsetCommit)) }

func (s *Server) handleOffsetCommit(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := group.CommitRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: orEmpty(req.InstanceID),
		Generation: req.Generation, Retention: -1,
	}
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		cr.Retention = msDuration(req.RetentionTimeMillis)
	}
	// A consumer group's member (KIP-848) is checked by its coordinator,
	// against its member epoch; its offsets are then the classic
	// coordinator's as a simple consumer's are, since it has no
	// generation there.
	isConsumer, refused, check := s.consumers.ValidateCommit(req.Group, req.MemberID, req.Generation)
	// A commit may create the group (a simple consumer's): checked
	// against a share group of the id and made in one step
	// (group_types.go); a share group's id is GROUP_ID_NOT_FOUND, as
	// Kafka's ShareGroup.validateOffsetCommit answers.
	defer s.groupTypes.lock(req.Group)()
	if err := s.notShareGroup(req.Group); err != nil {
		refused = err
	}
	if isConsumer {
		cr.MemberID, cr.InstanceID, cr.Generation = "", "", -1
	}
	// Each partition's answer: UNKNOWN_TOPIC_OR_PARTITION here, the
	// coordinator's for the others (at committed[i]).
	var committed []*kmsg.OffsetCommitResponseTopicPartition
	c := s.access(r)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		denied := c.TopicCode(opRead, t.Topic)
		for i, p := range t.Partitions {
			rt.Partitions[i] = kmsg.NewOffsetCommitResponseTopicPartition()
			rt.Partitions[i].Partition = p.Partition
			if code := memberCode(s.partitionCode(denied, t.Topic, p.Partition), refused, check, t.Topic, p.Partition); code != 0 {
				rt.Partitions[i].ErrorCode = code
				continue
			}
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			cr.Offsets = append(cr.Offsets, group.CommitOffset{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: orEmpty(p.Metadata),
			})
			committed = append(committed, &rt.Partitions[i])
		}
	}
	if len(cr.Offsets) == 0 {
		r.Respond(resp)
		return
	}
	// Answered once the commit is replicated (group/service), from the
	// goroutine that ends its wait.
	s.groups.CommitOffsets(cr, func(errs []*kerr.Error) {
		for i, err := range errs {
			committed[i].ErrorCode = group.Code(err)
		}
		r.Respond(resp)
	})
}
