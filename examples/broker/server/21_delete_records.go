package server

// DeleteRecords: v0-v2.
//
// Deletes, per partition, the records before an offset (KIP-107): the
// partition's leader moves its log start to exactly that offset, -1
// meaning its high watermark, inside a batch if it falls there, as
// Kafka's log start may (package storage, logstart.go): fetches below it
// are then OFFSET_OUT_OF_RANGE, ListOffsets' earliest answers it, fetch
// responses carry it, and the segments wholly before it are deleted. On
// a broker with --log.dirs it survives a restart. The answer waits in the
// DeleteRecords purgatory (package replica, Kafka's DelayedDeleteRecords)
// until the partition's low watermark, the smallest log start among its
// replicas on live brokers as their fetches report it, reaches the
// offset; each follower takes its leader's log start from its fetches.
// At timeout_ms the partitions not there yet are REQUEST_TIMED_OUT (their
// leader's log start stays moved). A broker alone answers at once.
//
// Per partition, as Kafka answers: a topic the client may not DELETE is
// TOPIC_AUTHORIZATION_FAILED (authz.go), an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION,
// a partition this broker does not lead NOT_LEADER_OR_FOLLOWER, an offset
// past the high watermark or negative (but -1) OFFSET_OUT_OF_RANGE, each
// with low watermark -1, and a topic whose cleanup.policy is compact
// without delete POLICY_VIOLATION.
//
// Not implemented: throttling.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteRecords, 0, 2, (*Server).handleDeleteRecords) }

func (s *Server) handleDeleteRecords(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	c := s.access(r)
	var parts []replica.DeleteRecordsPart
	for ti, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		denied := c.TopicCode(opDelete, rt.Topic)
		topic, terr := s.replicas.Store().Topic(rt.Topic)
		if terr == nil && coordinator.IsInternal(rt.Topic) {
			terr = fmt.Errorf("%w: cannot delete records of internal topic %s", storage.ErrInvalidTopic, rt.Topic)
		}
		if terr == nil && !topic.Config().Cleanup.Deletes() {
			// Kafka's words: the log start of a compacted topic is
			// the cleaner's, not a client's.
			terr = fmt.Errorf("%w: Records of partitions of %s can not be deleted due to the configured policy", errDeletePolicy, rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			var (
				p   *storage.Partition
				err = terr
			)
			if err == nil {
				p, err = topic.Partition(rp.Partition)
			}
			switch {
			case denied != 0:
				sp.ErrorCode = denied
			case err != nil:
				sp.ErrorCode = errorCode(err)
			default:
				parts = append(parts, replica.DeleteRecordsPart{Partition: p, Offset: rp.Offset,
					TopicIndex: ti, PartitionIndex: len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	s.replicas.DeleteRecords(r, resp, parts, msDuration(req.TimeoutMillis))
}
