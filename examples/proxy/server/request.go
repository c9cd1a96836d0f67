package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// request is one client request, with its place in its connection's
// answer order. A handler answers it once, with respond, noResponse or
// hangUp, from any goroutine: at once, or later from an upstream answer or
// a purgatory's OnComplete. Only the first answer counts.
type request struct {
	s    *Server
	c    *conn
	kreq kmsg.Request
	corr int32
	// clientVersion is the version the client asked for; kreq's differs
	// only for an ApiVersions newer than the proxy's, answered in v0.
	clientVersion int16
	clientID      string
	at            time.Time

	// Guarded by c.mu: how it is answered, and whether the reader is still
	// dispatching it (it then writes the answer itself: conn.dispatched).
	state      answerState
	resp       kmsg.Response
	inDispatch bool
}

type answerState uint8

const (
	pending    answerState = iota
	ready                  // resp is to be written
	noResponse             // acks=0: nothing to write, order kept
	hangUp                 // write what is owed before, then close
)

// respond answers r with resp, at r's version.
func (r *request) respond(resp kmsg.Response) {
	resp.SetVersion(r.kreq.GetVersion())
	r.c.answer(r, ready, resp)
}

// noResponse ends r without an answer (a produce with acks=0).
func (r *request) noResponse() { r.c.answer(r, noResponse, nil) }

// hangUp ends r without an answer and closes the connection once the
// answers owed before r are written: what a broker that cannot answer does
// (Kafka after a failed acks=0 produce; here, a forward upstream failed).
// The client sees its connection drop and retries.
func (r *request) hangUp(err error) {
	r.log().Info("closing the client connection", zap.Error(err))
	r.c.answer(r, hangUp, nil)
}

func (r *request) log() *zap.Logger {
	return r.s.log.With(zap.String("client", r.c.remote), zap.String("client_id", r.clientID),
		zap.String("api", kmsg.NameForKey(r.kreq.Key())), zap.Int16("version", r.kreq.GetVersion()))
}
