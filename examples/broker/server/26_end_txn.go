package server

// EndTxn: v0-v4.
//
// Commits or aborts a producer's ongoing transaction at its transaction
// coordinator (package txn): answered once PrepareCommit or PrepareAbort
// is durable in __transaction_state, after which the coordinator writes
// the markers to every partition of the transaction (see txns.go) and then
// CompleteCommit or CompleteAbort. A retry of an ended transaction's
// commit (or abort) is answered NONE; the other outcome INVALID_TXN_STATE;
// an EndTxn while the markers are still being written,
// CONCURRENT_TRANSACTIONS, which clients retry. v5 (KIP-890 part 2, a new
// epoch on every EndTxn) is not served: this broker runs transaction
// version 1, and advertises no transaction.version feature, so clients do
// not ask for it.
//
// Authorization (authz.go): WRITE on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.EndTxn, 0, 4, (*Server).handleEndTxn) }

func (s *Server) handleEndTxn(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if err := s.txnTopic.KeyError(req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		r.Respond(resp)
		return
	}
	s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err *kerr.Error) {
		if err != nil {
			resp.ErrorCode = fencedCode(err.Code, req.Version, 2)
		}
		r.Respond(resp)
	})
}
