package server

// AddPartitionsToTxn: v0-v5.
//
// Adds partitions to a producer's ongoing transaction at its transaction
// coordinator (package txn): once the addition is durable in
// __transaction_state the producer may write to them, and ending the
// transaction writes its marker to each. v0-v3 name one transaction, a
// client's; v4+ batch several (KIP-890), each answered on its own, and may
// only verify (verify_only: a partition leader asking whether a partition
// is in the transaction, KIP-890 part 1, answered from the coordinator's
// state without a write: a partition not in it is TRANSACTION_ABORTABLE,
// as Kafka 3.8+ answers, which the leader maps for its client). v5 without verify_only is a partition leader
// adding the partition of a Produce v12+ to the transaction of a producer
// running transaction version 2 (KIP-890 part 2; produce_verify.go): the
// transaction is marked as version 2's (txn.Coordinator.AddPartitionsV2). kgo sends v4+ in the batched form when a broker
// offers it, as Kafka's admin client may, so both forms are served to
// anyone. A partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION and
// the others of its transaction OPERATION_NOT_ATTEMPTED, as in Kafka; the
// coordinator's errors (NOT_COORDINATOR, CONCURRENT_TRANSACTIONS,
// PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE) are the
// transaction's, on each of its partitions. v4+'s top-level error is
// NONE but for authorization.
//
// Authorization (authz.go), as Kafka: v4+ is the brokers' (KIP-890) and
// needs CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED, top
// level; kgo 1.22 pins a client's single transaction to v3); each
// transaction needs WRITE on its transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for its partitions), each topic
// WRITE, an internal one never allowed (TOPIC_AUTHORIZATION_FAILED, and
// OPERATION_NOT_ATTEMPTED for the transaction's other partitions, as for
// an unknown partition), before its coordinator is asked.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AddPartitionsToTxn, 0, 5, (*Server).handleAddPartitionsToTxn) }

// addRequest is one transaction of an AddPartitionsToTxn, in either form.
type addRequest struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	topics     []kmsg.AddPartitionsToTxnRequestTransactionTopic
}

func (s *Server) handleAddPartitionsToTxn(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var adds []addRequest
	if req.Version < 4 {
		a := addRequest{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch}
		for _, rt := range req.Topics {
			a.topics = append(a.topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
		}
		adds = append(adds, a)
	} else {
		for _, t := range req.Transactions {
			adds = append(adds, addRequest{id: t.TransactionalID, pid: t.ProducerID, epoch: t.ProducerEpoch,
				verifyOnly: t.VerifyOnly, topics: t.Topics})
		}
	}
	if len(adds) == 0 {
		r.Respond(resp)
		return
	}
	var mu sync.Mutex
	left := len(adds)
	answers := make([]kmsg.AddPartitionsToTxnResponseTransaction, len(adds))
	c := s.access(r)
	for i := range adds {
		s.addPartitions(c, &adds[i], req.Version, func(answer kmsg.AddPartitionsToTxnResponseTransaction) {
			mu.Lock()
			answers[i] = answer
			left--
			last := left == 0
			mu.Unlock()
			if !last {
				return
			}
			if req.Version >= 4 {
				resp.Transactions = answers
			} else {
				for _, tt := range answers[0].Topics {
					rt := kmsg.NewAddPartitionsToTxnResponseTopic()
					rt.Topic = tt.Topic
					for _, tp := range tt.Partitions {
						rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
						rp.Partition, rp.ErrorCode = tp.Partition, tp.ErrorCode
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			r.Respond(resp)
		})
	}
}

// addPartitions adds (or verifies) one transaction's partitions and calls
// answer with its part of the response.
func (s *Server) addPartitions(c access, a *addRequest, version int16, answer func(kmsg.AddPartitionsToTxnResponseTransaction)) {
	var parts []txn.TopicPartition
	unknown := make(map[txn.TopicPartition]bool)
	denied := make(map[string]bool) // topics the client may not write
	for _, rt := range a.topics {
		if c.On() && (coordinator.IsInternal(rt.Topic) || !c.Allows(opWrite, topicResource, rt.Topic)) {
			denied[rt.Topic] = true
		}
		for _, p := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
			parts = append(parts, tp)
			if !s.partitionExists(rt.Topic, p) {
				unknown[tp] = true
			}
		}
	}
	respond := func(codeOf func(txn.TopicPartition) int16) {
		out := kmsg.NewAddPartitionsToTxnResponseTransaction()
		out.TransactionalID = a.id
		for _, rt := range a.topics {
			st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				sp.Partition = p
				sp.ErrorCode = codeOf(txn.TopicPartition{Topic: rt.Topic, Partition: p})
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
		answer(out)
	}
	all := func(code int16) func(txn.TopicPartition) int16 {
		return func(txn.TopicPartition) int16 { return code }
	}
	if version >= 4 { // v0-v3's single transaction was checked whole (authz.go's gates)
		if code := c.TxnCode(a.id); code != 0 {
			respond(all(code))
			return
		}
	}
	if len(denied) > 0 {
		respond(func(tp txn.TopicPartition) int16 {
			switch {
			case denied[tp.Topic]:
				return kerr.TopicAuthorizationFailed.Code
			case unknown[tp]:
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		return
	}
	if err := s.txnTopic.KeyError(a.id); err != nil {
		respond(all(err.Code))
		return
	}
	if len(unknown) > 0 {
		respond(func(tp txn.TopicPartition) int16 {
			if unknown[tp] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		return
	}
	if a.verifyOnly {
		errs := s.txns.VerifyPartitions(a.id, a.pid, a.epoch, parts)
		respond(func(tp txn.TopicPartition) int16 {
			if err := errs[tp]; err != nil {
				return err.Code
			}
			return 0
		})
		return
	}
	add := s.txns.AddPartitions
	if version >= 5 {
		add = s.txns.AddPartitionsV2 // only brokers send v4+ (CLUSTER_ACTION)
	}
	add(a.id, a.pid, a.epoch, parts, func(err *kerr.Error) {
		code := int16(0)
		if err != nil {
			code = fencedCode(err.Code, version, 2)
		}
		respond(all(code))
	})
}
