package server

// DescribeTransactions: v0.
//
// Describes transactional ids this broker coordinates (KIP-664): state as
// Kafka names it ("Ongoing", "PrepareCommit", "CompleteAbort"...),
// producer id and epoch, timeout, start time and partitions. An id
// coordinated elsewhere is NOT_COORDINATOR (the admin client finds its
// coordinator first), one loading COORDINATOR_LOAD_IN_PROGRESS, one
// unknown TRANSACTIONAL_ID_NOT_FOUND. An id the client may not DESCRIBE is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, before its coordinator is asked,
// and the topics it may not DESCRIBE are left out of a transaction's
// partitions, as Kafka answers (authz.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeTransactions, 0, 0, (*Server).handleDescribeTransactions) }

func (s *Server) handleDescribeTransactions(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var owned []string
	c := s.access(r)
	for _, id := range req.TransactionalIDs {
		code := int16(0)
		if !c.Allows(opDescribe, txnResource, id) {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		} else if err := s.txnTopic.KeyError(id); err != nil {
			code = err.Code
		}
		if code != 0 {
			ts := kmsg.NewDescribeTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ErrorCode = id, code
			ts.ProducerID, ts.ProducerEpoch = -1, -1
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		owned = append(owned, id)
	}
	for _, d := range s.txns.Describe(owned) {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID, ts.State = d.TxnID, d.State.String()
		if d.Err != nil {
			ts.ErrorCode = d.Err.Code
		}
		ts.ProducerID, ts.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		ts.TimeoutMillis, ts.StartTimestamp = int32(d.Timeout.Milliseconds()), -1
		if !d.Started.IsZero() {
			ts.StartTimestamp = d.Started.UnixMilli()
		}
		byTopic := make(map[string]int)
		for _, tp := range d.Partitions {
			if !c.Sees(opDescribe, topicResource, tp.Topic) {
				continue
			}
			i, ok := byTopic[tp.Topic]
			if !ok {
				i = len(ts.Topics)
				byTopic[tp.Topic] = i
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				ts.Topics = append(ts.Topics, t)
			}
			ts.Topics[i].Partitions = append(ts.Topics[i].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	r.Respond(resp)
}
