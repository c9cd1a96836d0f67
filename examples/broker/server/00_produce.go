package server

// Produce: v3-v13.
//
// Appends each partition's record batch to its log (v3+ carries exactly
// one v2 batch per partition), named by topic name, or by topic id from
// v13 (UNKNOWN_TOPIC_ID when unknown). Each batch is validated as
// Kafka's LogValidator does (package storage): framing, magic, CRC-32C
// and record count (CORRUPT_MESSAGE), one batch, no control batch, a
// sequence with a producer id (INVALID_RECORD), and its size against the
// topic's max.message.bytes, by default message.max.bytes
// (MESSAGE_TOO_LARGE); then its records, walked as they are decompressed
// (a payload that does not decompress is CORRUPT_MESSAGE, one that
// inflates past socket.request.max.bytes, the most a client could send
// uncompressed, MESSAGE_TOO_LARGE): as many as the count says, each whole,
// at offset deltas 0, 1, 2..., the max timestamp theirs (INVALID_RECORD
// otherwise). A valid batch is stored as sent. A batch for an internal topic (__consumer_offsets)
// is INVALID_TOPIC_EXCEPTION, as Kafka answers a client. Idempotent
// batches are checked against their producer's sequence: a retry of one
// of the last max.idempotent.in.flight batches is answered NONE with its
// original base offset, a gap OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch
// INVALID_PRODUCER_EPOCH (what Kafka answers a produce since 2.7;
// PRODUCER_FENCED is for transactional calls). Kafka stopped answering UNKNOWN_PRODUCER_ID to produces in 2.5
// (KIP-360): a producer without state on a partition may start at any
// sequence, and so it may here.
//
// Acks: 0 sends no response, keeping the order of the responses around it;
// if any partition failed, the connection is closed once the earlier
// responses are written, as Kafka does, so the client notices. 1 answers
// once appended. -1 (all) answers when every in-sync replica has the
// batches, Kafka's DelayedProduce: an operation in the Produce purgatory,
// keyed by each partition appended to, that completes when the partition's
// high watermark passes its batch, or at timeout_ms with REQUEST_TIMED_OUT.
// On one broker, or a leader alone in its ISR, the high watermark is the
// log end as soon as the batch is appended, so it completes at once; with
// followers it completes when their fetches have moved it (package
// replica).
// With acks=all, a partition whose ISR is smaller than min.insync.replicas
// (the topic's, else the broker's) is NOT_ENOUGH_REPLICAS and nothing is
// appended; if the ISR shrinks below it while the produce waits, it is
// answered NOT_ENOUGH_REPLICAS_AFTER_APPEND once the remaining ISR has the
// batch, as in Kafka. A partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER. Any other acks value is INVALID_REQUIRED_ACKS.
//
// A transactional batch (from a producer InitProducerId gave a
// transactional id's producer id) opens its producer's transaction in the
// partition, if none is open there: the partition's last stable offset
// stays at the transaction's first batch until its coordinator's marker
// ends it (package storage); a non-transactional batch from a producer
// with an open transaction is INVALID_TXN_STATE. A batch that would open
// a transaction is appended only once its transaction's coordinator
// confirms the partition is in the transaction (KIP-890 part 1): else
// TRANSACTION_ABORTABLE from v11 (INVALID_TXN_STATE to v10 and below,
// which predate it), or NOT_ENOUGH_REPLICAS, which producers retry, when
// the coordinator cannot be asked (produce_verify.go). From v12 (KIP-890
// part 2, transaction version 2) the leader adds the partition to the
// transaction at the coordinator instead, and the producer sends no
// AddPartitionsToTxn; the epoch bumped by every EndTxn v5 starts at
// sequence 0 once its marker is written.
//
// Quotas (quotas.go): a client's producer_byte_rate bounds its requests'
// bytes, recorded when answered; one over it is answered at once with
// throttle_time_ms, and its connection muted that long (KIP-219), an
// acks=0 produce's too.
//
// Not implemented: log append time (message.timestamp.type: batches keep
// their CreateTime), per-record errors (a batch is refused whole, with the
// reason in its error message, not record by record), and the KIP-951
// leader hints (the leader never moves).
//
// Authorization (authz.go): transactional batches need WRITE on their
// transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
// partition), each topic WRITE (else TOPIC_AUTHORIZATION_FAILED for its
// partitions, before any other check of them).

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.Produce, 3, 13, (*Server).handleProduce) }

func (s *Server) handleProduce(r *kafkanet.Request) {
	if r.Msg.(*kmsg.ProduceRequest).TransactionID == nil && !s.produceOrder.queued(r.Conn()) {
		s.produce(r, nil) // no transaction to verify, nothing ahead of it on its connection
		return
	}
	s.produceOrder.run(r.Conn(), func(done func()) { s.verifyThenProduce(r, done) })
}

// produce appends the request's batches and answers, or waits for their
// replication. v holds what a KIP-890 check found (nil: none was made):
// the partitions it refused, with their error codes, and the guards of
// those it confirmed, by topic and partition index in the request.
func (s *Server) produce(r *kafkanet.Request, v *verified) {
	req := r.Msg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	c := s.access(r)
	var (
		waits  []replica.ProduceWait // partitions appended to, for acks=all
		failed bool
	)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		byID := req.Version >= 13
		topic, denied, terr := s.produceTopic(c, rt, byID)
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			var err error
			switch {
			case denied != 0:
				sp.ErrorCode = denied
			case !validAcks:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case v.refused([2]int{ti, pi}) != 0:
				sp.ErrorCode = v.refused([2]int{ti, pi})
			case terr != nil:
				err = terr
			default:
				var p *storage.Partition
				if p, err = topic.Partition(rp.Partition); err != nil {
					break
				}
				var (
					res  storage.AppendResult
					wait replica.ProduceWait
				)
				if res, wait, err = s.replicas.AppendVerified(p, logBytes(r, rp.Records), req.Acks == -1, v.guard([2]int{ti, pi})); err != nil {
					refuseData(r, err)
					break
				}
				sp.BaseOffset, sp.LogStartOffset = res.BaseOffset, res.LogStartOffset
				wait.TopicIndex, wait.PartitionIndex = ti, len(st.Partitions)
				waits = append(waits, wait)
			}
			if err != nil {
				sp.ErrorCode = replica.PartitionErrorCode(err, byID)
				if err != terr || len(st.Partitions) == 0 {
					// A topic's error is said once, in its first
					// partition's message, not repeated in every one
					// (Kafka sends none): the response would grow
					// with the partitions a request names.
					sp.ErrorMessage = errorMessage(err)
				}
			}
			if sp.ErrorCode != 0 {
				sp.BaseOffset = -1
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}

	a := s.withQuota(r, s.quotas.produce) // producer_byte_rate, recorded as answered (quotas.go)
	switch {
	case req.Acks == 0 && failed:
		a.HangUp()
	case req.Acks == 0:
		a.NoResponse()
	case req.Acks == -1 && len(waits) > 0:
		// Kafka waits only if some partition was appended to.
		s.replicas.AwaitReplication(a, resp, waits, msDuration(req.TimeoutMillis))
	default:
		a.Respond(resp)
	}
}

// produceTopic returns the topic rt names, or its error, and the code of
// the client's authorization to write it: an unknown topic id is
// UNKNOWN_TOPIC_ID, a topic the client may not write
// TOPIC_AUTHORIZATION_FAILED whether it exists or not, as Kafka answers.
func (s *Server) produceTopic(c access, rt *kmsg.ProduceRequestTopic, byID bool) (*storage.Topic, int16, error) {
	if byID {
		topic, err := s.replicas.Store().TopicByID(rt.TopicID)
		if err != nil {
			return nil, 0, err
		}
		return topic, c.TopicCode(opWrite, topic.Name), internalTopicCheck(topic)
	}
	if denied := c.TopicCode(opWrite, rt.Topic); denied != 0 {
		return nil, denied, nil
	}
	topic, err := s.replicas.Store().Topic(rt.Topic)
	if err != nil {
		return nil, 0, err
	}
	return topic, 0, internalTopicCheck(topic)
}

// internalTopicCheck refuses a client's produce to an internal topic.
func internalTopicCheck(t *storage.Topic) error {
	if coordinator.IsInternal(t.Name) {
		return internalTopicError(t.Name)
	}
	return nil
}

// internalTopicError is the error a produce to an internal topic gets:
// INVALID_TOPIC_EXCEPTION, with Kafka's message.
func internalTopicError(name string) error {
	return fmt.Errorf("%w: cannot append to internal topic %s", storage.ErrInvalidTopic, name)
}

// logBytes returns records, a batch decoded from r's body, as the log may
// keep them: the log stores the bytes it is given (storage's
// Partition.Append) and so keeps their whole buffer in memory, which is
// the request's own; a batch that is less than half of its request is
// copied, so that the log never holds more than twice what it counts.
func logBytes(r *kafkanet.Request, records []byte) []byte {
	if 2*len(records) < r.BodySize {
		return bytes.Clone(records)
	}
	return records
}
