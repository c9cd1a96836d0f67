package server

// ListTransactions: v0-v2.
//
// Lists the transactional ids this broker coordinates (KIP-664; the admin
// client asks every broker), filtered by state, producer id, v1's minimum
// duration (KIP-994: transactions open at least that long) and v2's
// regular expression on the id (KIP-1152; Go's RE2 syntax, close to the
// Java pattern Kafka takes). A state filter Kafka does not know is
// listed in unknown_state_filters and matches nothing; an invalid pattern
// is INVALID_REGULAR_EXPRESSION. The ids the client may not DESCRIBE are
// left out (authz.go).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ListTransactions, 0, 2, (*Server).handleListTransactions) }

func (s *Server) handleListTransactions(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			r.Respond(resp)
			return
		}
	}
	listings, unknown := s.txns.List(req.StateFilters, req.ProducerIDFilters, msDuration(req.DurationFilterMillis))
	resp.UnknownStateFilters = unknown
	c := s.access(r)
	for _, l := range listings {
		if pattern != nil && !pattern.MatchString(l.TxnID) || !c.Sees(opDescribe, txnResource, l.TxnID) {
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = l.TxnID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	r.Respond(resp)
}
