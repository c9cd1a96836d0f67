package kafkanet

import (
	"context"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Request is one request read from a connection, with its place in the
// connection's answer order. Its Handler answers it once, with Respond,
// RespondHolding, NoResponse or HangUp, from any goroutine: at once, or
// later (from an operation's OnComplete, an upstream's answer). Only the
// first answer counts.
type Request struct {
	// Msg is the request, decoded by kmsg at the version it is served
	// at, which is the client's but for an ApiVersions newer than the
	// Handler's (read as v0).
	Msg kmsg.Request
	// ClientID is the header's client id; "" for a null one.
	ClientID string
	// ClientVersion is the version the client asked for.
	ClientVersion int16
	// Received is when it was read: the latency metric's start.
	Received time.Time
	// BodySize is the size of the request's body, header included: the
	// byte slices Msg holds alias one buffer of that size, its own
	// (never reused), which stays in memory while any of them is kept.
	BodySize int

	conn *Conn
	corr int32
	slot *slot
	// charge is the memory budget its body holds, given back when the
	// handler says so (ReleaseBody: the broker's dispatch, once a request
	// whose decoded fields do not alias the body is handled), and at the
	// latest when it is answered.
	charge       *memCharge
	bodyReleased atomic.Bool
	// held is what the answer takes of the budget (Room), held until it
	// is written. Used by the goroutine that answers, only.
	held memCharge
	once sync.Once
	// onAnswer, if set, sees the answer before it is queued (OnAnswer).
	onAnswer func(kmsg.Response) time.Duration
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

	// written, if set, is called once resp has been written to the
	// socket (OnWritten).
	written func()

	// hangUp, with skip: close the connection once the answers before it
	// are written (a failed acks=0 produce); without: once it is written
	// (a failed authentication's answer).
	hangUp bool

	// inDispatch: the reader is still dispatching the request, and will
	// look for its answer when dispatch returns (Conn.dispatched), so
	// filling it wakes no writer. Guarded by the Conn's mu.
	inDispatch bool
}

// Context returns the context of r's connection (Conn.Context): an
// operation waiting on r's behalf is submitted with it, so that it
// completes at once if the client goes away.
func (r *Request) Context() context.Context { return r.conn.ctx }

// Conn returns the connection r was read from.
func (r *Request) Conn() *Conn { return r.conn }

// RemoteAddr returns the client's address.
func (r *Request) RemoteAddr() net.Addr { return r.conn.remote }

// ReleaseBody gives back the memory budget r's body holds, once: a
// Handler calls it when nothing it keeps aliases the body (kmsg's decoded
// byte slices do, a produce's batches among them), so that a request that
// waits long (a long poll, a join through a rebalance) holds no more of
// the budget than its answer will. An answer releases it too.
func (r *Request) ReleaseBody() {
	if r.bodyReleased.CompareAndSwap(false, true) {
		r.conn.s.mem.releaseAll(r.charge)
	}
}

// Room takes for r's answer what is left of the memory budget, up to n
// bytes, without waiting, and returns it: a fetch reads no more records
// than that (but one batch: see RespondHolding). What it took is held
// until the answer is written.
func (r *Request) Room(n int) int { return int(r.conn.s.mem.take(&r.held, int64(n))) }

// Respond answers r with resp, whose version is set from the request's.
func (r *Request) Respond(resp kmsg.Response) { r.respond(resp, nil) }

// RespondHolding is Respond for an answer that holds n bytes (a fetch's
// records) in the memory budget until it is written: what Room took is
// adjusted to n, past the budget if need be (Kafka's one batch returned
// whatever its size).
func (r *Request) RespondHolding(resp kmsg.Response, n int) {
	b := r.conn.s.mem
	if more := int64(n) - r.held.n; more > 0 {
		b.force(&r.held, more)
	} else {
		b.release(&r.held, -more)
	}
	r.respond(resp, &r.held)
}

// respond answers r with resp, holding charge (nil: nothing) until
// written. Only the first answer counts; a later one gives its charge back.
func (r *Request) respond(resp kmsg.Response, charge *memCharge) {
	answered := false
	r.once.Do(func() {
		answered = true
		mute := r.answering(resp)
		resp.SetVersion(r.Msg.GetVersion())
		r.conn.s.metrics.observe(r.Msg.Key(), time.Since(r.Received))
		r.ReleaseBody()
		r.conn.fill(r.slot, resp, false, charge)
		r.conn.throttle(mute)
	})
	if !answered {
		r.conn.s.mem.releaseAll(charge)
	}
}

// respondThenClose answers r with resp, and closes the connection once
// it is written (an answer to a failed authentication).
func (r *Request) respondThenClose(resp kmsg.Response) {
	r.conn.closeAfter(r.slot)
	r.respond(resp, nil)
}

// OnWritten has f called once r's answer has been written to the socket,
// on the goroutine that wrote it (which writes nothing more meanwhile: f
// must be quick, a metric's observation): for a latency measured to the
// write. It must be called before r is answered; an answer never written
// (the connection closed first) never calls f.
func (r *Request) OnWritten(f func()) { r.slot.written = f }

// Principal returns the principal of r's connection (Conn.Principal).
func (r *Request) Principal() string { return r.conn.Principal() }

// NoResponse ends r without a response (a produce with acks=0); the
// responses after it still go out in order.
func (r *Request) NoResponse() {
	r.once.Do(func() {
		mute := r.answering(nil)
		r.conn.s.metrics.observe(r.Msg.Key(), time.Since(r.Received))
		r.ReleaseBody()
		r.conn.fill(r.slot, nil, true, nil)
		r.conn.throttle(mute)
	})
}

// OnAnswer has f called once r is answered, with its answer (nil for
// NoResponse; not for HangUp), on the answering goroutine before the
// answer is queued: f may set the answer's throttle time, and returns how
// long to mute r's connection for after it (Throttle), 0 for not at all.
// A request quota measures the time spent on r this way (the broker's
// request_percentage). It must be called before r is answered: by the
// dispatcher, before the handler runs.
func (r *Request) OnAnswer(f func(kmsg.Response) time.Duration) { r.onAnswer = f }

// answering runs the OnAnswer hook, if any, on resp.
func (r *Request) answering(resp kmsg.Response) time.Duration {
	if r.onAnswer == nil {
		return 0
	}
	return r.onAnswer(resp)
}

// HangUp ends r without a response and closes the connection once the
// answers before it are written: Kafka's answer to an acks=0 produce that
// failed, so that the client, which reads no responses, notices (its
// records are lost either way) and refreshes its metadata; and what a
// proxy whose forward failed does, as a broker that goes away.
func (r *Request) HangUp() {
	r.once.Do(func() {
		r.conn.s.metrics.observe(r.Msg.Key(), time.Since(r.Received))
		r.ReleaseBody()
		r.conn.hangUp(r.slot)
	})
}

// Logger returns a logger of the server's, with r's client, client id,
// API and version.
func (r *Request) Logger() *zap.Logger {
	return r.conn.s.log.With(zap.Stringer("client", r.conn.remote), zap.String("client_id", r.ClientID),
		zap.String("api", kmsg.NameForKey(r.Msg.Key())), zap.Int16("version", r.Msg.GetVersion()))
}

// Refuse counts a refusal of r's client for reason in the server's
// refusals metric, and logs it with fields at most once a minute per
// client host and reason (see refusals.go): for the refusals a Handler
// makes itself (a name past Kafka's limits, a corrupt batch).
func (r *Request) Refuse(reason string, fields ...zap.Field) {
	r.conn.s.refusals.refuse(r.conn.remote, reason, fields...)
}

// dispatch hands r to the Handler, on the connection's reader goroutine.
// A panicking handler is a bug: it is logged with its stack and the
// connection is closed, as if the request were malformed; the server goes
// on.
func (s *Server) dispatch(r *Request) {
	defer func() {
		if v := recover(); v != nil {
			r.Logger().Error("handler panicked; closing the connection", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			s.metrics.panics.Inc()
			_ = r.conn.nc.Close()
		}
	}()
	s.handler.ServeKafka(r)
}
