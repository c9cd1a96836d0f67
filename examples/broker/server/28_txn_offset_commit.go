package server

// TxnOffsetCommit: v0-v3.
//
// Commits a consumer's offsets in a producer's transaction (KIP-98), to
// the group's coordinator, routed as OffsetCommit is (package group checks
// the member and generation that v3 carries, KIP-447, and creates a group
// that does not exist, Empty, as Kafka does; for a KIP-848 consumer group
// package consumergroup checks the member and its epoch, as OffsetCommit's). The offsets are appended to
// the group's partition of __consumer_offsets as a transactional batch of
// the producer's id and epoch, answered once replicated as a commit is,
// and pending until the transaction's marker is written to that partition
// (WriteTxnMarkers, which calls group.Coordinator.CompleteTxn): OffsetFetch
// returns the committed offsets meanwhile, and UNSTABLE_OFFSET_COMMIT to
// one with require_stable. A partition that does not exist is answered
// UNKNOWN_TOPIC_OR_PARTITION, as for OffsetCommit. v2 carries each
// partition's leader epoch; before v2, COORDINATOR_LOAD_IN_PROGRESS is
// answered COORDINATOR_NOT_AVAILABLE, as Kafka answers clients older than
// 2.0, which do not retry it. A share group's id is GROUP_ID_NOT_FOUND
// for every partition, as in Kafka (group_types.go).
//
// Authorization (authz.go): WRITE on the transactional id, then READ on
// the group (else TRANSACTIONAL_ID_ or GROUP_AUTHORIZATION_FAILED for
// every partition), READ on each topic (else TOPIC_AUTHORIZATION_FAILED
// for its partitions).
//
// Not checked here, as Kafka 3.x does not without KIP-890's verification:
// that the producer's transaction is open and added the group
// (AddOffsetsToTxn). v4 and v5 (KIP-890 part 2: the group added to the
// transaction implicitly) and v6 (topic ids) are not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.TxnOffsetCommit, 0, 3, groupRouted((*Server).handleTxnOffsetCommit)) }

func (s *Server) handleTxnOffsetCommit(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	tr := group.TxnCommitRequest{Group: req.Group, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1}
	if req.Version >= 3 {
		tr.MemberID, tr.InstanceID, tr.Generation = req.MemberID, orEmpty(req.InstanceID), req.Generation
	}
	// A KIP-848 consumer group's member is checked by its coordinator;
	// the offsets are then the classic coordinator's, as OffsetCommit's.
	isConsumer, refused, check := s.consumers.ValidateTxnCommit(req.Group, tr.MemberID, tr.InstanceID, tr.Generation)
	// A commit may create the group (a simple consumer's): checked
	// against a share group of the id and made in one step
	// (group_types.go); a share group's id is GROUP_ID_NOT_FOUND, as
	// Kafka's ShareGroup.validateOffsetCommit answers.
	defer s.groupTypes.lock(req.Group)()
	if err := s.notShareGroup(req.Group); err != nil {
		refused = err
	}
	if isConsumer {
		tr.MemberID, tr.InstanceID, tr.Generation = "", "", -1
	}
	// Each partition's answer: UNKNOWN_TOPIC_OR_PARTITION here, the
	// coordinator's for the others (at committed[i]).
	var committed []*kmsg.TxnOffsetCommitResponseTopicPartition
	c := s.access(r)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		denied := c.TopicCode(opRead, t.Topic)
		for i, p := range t.Partitions {
			rt.Partitions[i] = kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rt.Partitions[i].Partition = p.Partition
			if code := memberCode(s.partitionCode(denied, t.Topic, p.Partition), refused, check, t.Topic, p.Partition); code != 0 {
				rt.Partitions[i].ErrorCode = code
				continue
			}
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			tr.Offsets = append(tr.Offsets, group.CommitOffset{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: orEmpty(p.Metadata),
			})
			committed = append(committed, &rt.Partitions[i])
		}
	}
	if len(tr.Offsets) == 0 {
		r.Respond(resp)
		return
	}
	// Answered once the batch is replicated (group/service), from the
	// goroutine that ends its wait.
	s.groups.TxnCommitOffsets(tr, func(errs []*kerr.Error) {
		for i, err := range errs {
			committed[i].ErrorCode = group.Code(err)
		}
		r.Respond(resp)
	})
}
