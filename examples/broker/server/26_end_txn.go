package server

// EndTxn: v0-v5.
//
// Commits or aborts a producer's ongoing transaction at its transaction
// coordinator (package txn): answered once PrepareCommit or PrepareAbort
// is durable in __transaction_state, after which the coordinator writes
// the markers to every partition of the transaction (see txns.go) and then
// CompleteCommit or CompleteAbort. A retry of an ended transaction's
// commit (or abort) is answered NONE; the other outcome INVALID_TXN_STATE;
// an EndTxn while the markers are still being written,
// CONCURRENT_TRANSACTIONS, which clients retry.
//
// v5 is transaction version 2's (KIP-890 part 2; Kafka's EndTxn v5 and
// its clientTransactionVersion): every end, commit or abort, bumps the
// producer's epoch (a new producer id once the epochs are exhausted), the
// markers carry the new epoch, and the answer carries the producer id and
// epoch of the producer's next transaction; an abort with no transaction
// under way succeeds and bumps the epoch; a retry, one epoch short of the
// id's, is answered what the end gave (txn.Coordinator.EndTxnV2). Clients
// send it when the transaction.version feature is 2 (18_api_versions.go);
// v0-v4 are version 1's, as before.
//
// Authorization (authz.go): WRITE on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.EndTxn, 0, 5, (*Server).handleEndTxn) }

func (s *Server) handleEndTxn(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if err := s.txnTopic.KeyError(req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		r.Respond(resp)
		return
	}
	if req.Version >= 5 {
		s.txns.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit,
			func(pid int64, epoch int16, err *kerr.Error) {
				resp.ProducerID, resp.ProducerEpoch = pid, epoch
				if err != nil {
					resp.ErrorCode = err.Code
				}
				r.Respond(resp)
			})
		return
	}
	s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, func(err *kerr.Error) {
		if err != nil {
			resp.ErrorCode = fencedCode(err.Code, req.Version, 2)
		}
		r.Respond(resp)
	})
}
