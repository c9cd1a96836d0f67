package server

// AddOffsetsToTxn: v0-v4.
//
// Adds a group's partition of __consumer_offsets to a producer's ongoing
// transaction at its transaction coordinator (package txn), so that the
// producer's TxnOffsetCommit to the group (sent next, to the group's
// coordinator) is committed or dropped with the transaction: ending it
// writes its marker there too. Errors are AddPartitionsToTxn's. v4 differs
// from v3 only in what it lets a client infer (KIP-890 part 2); the answer
// is the same.
//
// Authorization (authz.go): WRITE on the transactional id, then READ on
// the group (TRANSACTIONAL_ID_ or GROUP_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AddOffsetsToTxn, 0, 4, (*Server).handleAddOffsetsToTxn) }

func (s *Server) handleAddOffsetsToTxn(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if err := s.txnTopic.KeyError(req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		r.Respond(resp)
		return
	}
	s.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, func(err *kerr.Error) {
		if err != nil {
			resp.ErrorCode = fencedCode(err.Code, req.Version, 2)
		}
		r.Respond(resp)
	})
}
