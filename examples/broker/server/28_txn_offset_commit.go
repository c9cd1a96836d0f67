package server

// TxnOffsetCommit: v0-v5.
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
// v4 is v3 (it adds TRANSACTION_ABORTABLE to the errors, which Kafka
// answers a v4 whose verification finds the group's partition not in the
// transaction; this broker does not verify before v5, below, so never
// answers it). v5 is transaction version 2's (KIP-890 part 2):
// the producer sends no AddOffsetsToTxn, and the group's
// __consumer_offsets partition is added to its transaction first, at the
// transaction's coordinator (the local one, or AddPartitionsToTxn v5 to
// another broker: produce_verify.go's checkTxn), before the offsets are
// appended; if the add fails, every partition is answered its error:
// INVALID_PRODUCER_EPOCH for a fenced producer, INVALID_PRODUCER_ID_MAPPING
// or INVALID_TXN_STATE as the coordinator answered, and
// COORDINATOR_NOT_AVAILABLE, which clients retry, when the transaction's
// coordinator is busy (the previous transaction completing), moved or
// unreachable.
//
// A marker of the producer's landing in the group's partition between a
// v5's add and its append (the coordinator aborting the transaction on
// its timeout) is at a later epoch than the commit's: the transaction
// added to ends at a bumped epoch (EndTxn v5, a timeout, a fence), and
// the previous transaction's marker, at the commit's epoch, is written
// before the add is answered (txn's completion wait). The partition
// fences the append with it, INVALID_PRODUCER_EPOCH, before anything is
// written, and nothing is left pending (txn_v2_test.go): what Kafka
// answers since KAFKA-19690, whose log checks the producer's epoch before
// its verification guard (4.0 answered that race INVALID_TXN_STATE). So
// the add takes no guard (storage.Partition.AddGuard): a marker that
// would void it fences the epoch first, and a guard is the producer's
// only one in the partition, so that two commits of the producer to
// groups of one partition would void each other's. Not guarded: a client
// that ends the transaction with an EndTxn v4 (no bump) while its v5
// commit is under way.
//
// Not checked before v5, unlike Kafka 3.6+, which verifies every version
// with the transaction's coordinator (KIP-890 part 1; TRANSACTION_ABORTABLE
// from v4, INVALID_TXN_STATE before): that the producer's transaction is
// open and added the group (AddOffsetsToTxn). v6 (topic ids) is not
// served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.TxnOffsetCommit, 0, 5, groupRouted((*Server).handleTxnOffsetCommit)) }

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
	commit := func() {
		s.groups.TxnCommitOffsets(tr, func(errs []*kerr.Error) {
			for i, err := range errs {
				committed[i].ErrorCode = group.Code(err)
			}
			r.Respond(resp)
		})
	}
	if req.Version < 5 {
		commit()
		return
	}
	tp := s.txns.OffsetsPartition(req.Group)
	v := toVerify{add: true, pid: req.ProducerID, epoch: req.ProducerEpoch, parts: []txn.TopicPartition{tp}}
	s.checkTxn(req.TransactionalID, v, func(errs map[txn.TopicPartition]*kerr.Error) {
		err, answered := errs[tp]
		if answered && err == nil {
			commit()
			return
		}
		code := addOffsetsCode(err)
		for _, p := range committed {
			p.ErrorCode = code
		}
		r.Respond(resp)
	})
}

// addOffsetsCode is what a TxnOffsetCommit v5 answers for an add of the
// group's partition to the transaction that failed with err (nil: not
// answered): the producer's errors as they are, a fence as the stale
// epoch TxnOffsetCommit answers, and the coordinator's state (busy,
// moved, unreachable) as COORDINATOR_NOT_AVAILABLE, which clients retry,
// as Kafka's group coordinator normalizes its verification's errors.
func addOffsetsCode(err *kerr.Error) int16 {
	switch err {
	case kerr.InvalidProducerIDMapping, kerr.InvalidTxnState, kerr.InvalidProducerEpoch:
		return err.Code
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
