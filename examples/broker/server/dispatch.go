package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// apis is filled by the init function of each API's file (00_produce.go,
// 01_fetch.go, ...), which states the versions it serves.
var apis kafkanet.Mux[func(*Server, *kafkanet.Request)]

// serve registers the handler of key for versions min to max; max is capped
// at the newest version kmsg knows.
func serve(key kmsg.Key, min, max int16, handle func(*Server, *kafkanet.Request)) {
	apis.Handle(key, min, max, handle)
}

// handler is the broker as its network layer (package kafkanet) sees it:
// the dispatch of its requests.
type handler struct{ s *Server }

var _ kafkanet.Handler = handler{}

// Supports reports whether the broker serves version of key.
func (h handler) Supports(key, version int16) bool { return apis.Supports(key, version) }

// ServeKafka hands r to its handler, on the connection's reader goroutine.
// Handlers never block: a request that has to wait becomes an operation in
// a purgatory. A panic is kafkanet's to recover: the connection is closed.
func (h handler) ServeKafka(r *kafkanet.Request) {
	if h.s.checkStrings(r) || h.s.gate(r) {
		return // refused: a string past Kafka's limits, or not authorized (authz.go)
	}
	rm := h.s.meterRequest(r) // request_quota.go
	apis.Lookup(r.Msg.Key()).Handler(h.s, r)
	if rm != nil {
		rm.returned()
	}
	if kmsg.Key(r.Msg.Key()) != kmsg.Produce {
		// The request is decoded and handled: what waits for an answer
		// (a long poll, a join through a rebalance) holds no more of
		// the budget than its answer will. A produce's batches alias
		// the body until appended; it gives it back when answered.
		r.ReleaseBody()
	}
}

// wait submits op to p on behalf of r's connection, tied to its context:
// if the client goes away before op completes, op completes at once
// (outcome ContextDone), so nothing is left behind in a purgatory. An error
// means op was not taken (the purgatory closed, or the client has gone
// already): op's OnComplete will not run, the caller answers it. Without
// one, op's OnComplete answers, exactly once.
func wait[K comparable](r *kafkanet.Request, p *purgatory.Purgatory[K], op operation.Operation, timeout time.Duration, keys []K) error {
	_, err := p.TryCompleteElseWatchContext(r.Context(), op, timeout, keys...)
	return err
}
