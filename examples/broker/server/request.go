package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// request is one request read from a connection, with its place in the
// connection's response order. A handler answers it once, with respond or
// noResponse, from any goroutine: at once, or later from an operation's
// OnComplete.
type request struct {
	s    *Server
	c    *conn
	kreq kmsg.Request
	corr int32
	// clientVersion is the version the client asked for; kreq's version
	// differs only for an ApiVersions newer than ours, answered in v0.
	clientVersion int16
	clientID      string
	at            time.Time // when it was read, for the latency metric

	slot *slot
	// charge is the memory budget its body holds, given back when the
	// handler returns, or, for a produce, whose batches alias the body
	// until appended, when answered (releaseBody).
	charge       *memCharge
	bodyReleased atomic.Bool
	once         sync.Once
}

// releaseBody gives back the memory budget r's body holds, once: it is
// called when r is answered, and when its handler returns.
func (r *request) releaseBody() {
	if r.bodyReleased.CompareAndSwap(false, true) {
		r.s.mem.releaseAll(r.charge)
	}
}

// slot is a request's place in its connection's response queue.
type slot struct {
	corr  int32
	resp  kmsg.Response // nil with skip
	skip  bool          // acks=0 produce: no response, but order is kept
	ready bool
	// charge is the memory budget resp's records hold (a fetch's), given
	// back once written.
	charge *memCharge

	// hangUp, with skip: close the connection once the answers before it
	// are written (a failed acks=0 produce).
	hangUp bool

	// inDispatch: the reader is still dispatching the request, and will
	// look for its answer when dispatch returns (conn.dispatched), so
	// filling it wakes no writer. Guarded by the conn's mu.
	inDispatch bool
}

// respond answers r with resp, whose version is set from the request's.
// Only the first answer counts.
func (r *request) respond(resp kmsg.Response) { r.respondHolding(resp, nil) }

// respondHolding is respond for a response whose records hold charge of
// the memory budget until they are written.
func (r *request) respondHolding(resp kmsg.Response, charge *memCharge) {
	answered := false
	r.once.Do(func() {
		answered = true
		resp.SetVersion(r.kreq.GetVersion())
		r.s.metrics.observe(r.kreq.Key(), time.Since(r.at))
		r.releaseBody()
		r.c.fill(r.slot, resp, false, charge)
	})
	if !answered {
		r.s.mem.releaseAll(charge)
	}
}

// noResponse ends r without a response (a produce with acks=0); the
// responses after it still go out in order.
func (r *request) noResponse() {
	r.once.Do(func() {
		r.s.metrics.observe(r.kreq.Key(), time.Since(r.at))
		r.releaseBody()
		r.c.fill(r.slot, nil, true, nil)
	})
}

// hangUp ends r without a response and closes the connection once the
// answers before it are written: Kafka's answer to an acks=0 produce that
// failed, so that the client, which reads no responses, notices (its
// records are lost either way) and refreshes its metadata.
func (r *request) hangUp() {
	r.once.Do(func() {
		r.s.metrics.observe(r.kreq.Key(), time.Since(r.at))
		r.releaseBody()
		r.c.hangUp(r.slot)
	})
}

// log returns the request's logger.
func (r *request) log() *zap.Logger {
	return r.s.log.With(zap.Stringer("client", r.c.remote), zap.String("client_id", r.clientID),
		zap.String("api", kmsg.NameForKey(r.kreq.Key())), zap.Int16("version", r.kreq.GetVersion()))
}

// wait submits op to p on behalf of r's connection, tied to its context:
// if the client goes away before op completes, op completes at once
// (outcome ContextDone), so nothing is left behind in a purgatory. An error
// means op was not taken (the purgatory closed, or the client has gone
// already): op's OnComplete will not run, the caller answers it. Without
// one, op's OnComplete answers, exactly once.
func wait[K comparable](r *request, p *purgatory.Purgatory[K], op operation.Operation, timeout time.Duration, keys []K) error {
	_, err := p.TryCompleteElseWatchContext(r.c.ctx, op, timeout, keys...)
	return err
}
