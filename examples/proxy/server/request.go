package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// request is one client request as the proxy's handlers see it: the
// network layer's (package kafkanet: its place in its connection's answer
// order, answered once with Respond, NoResponse or HangUp, from any
// goroutine) with the proxy that serves it.
type request struct {
	*kafkanet.Request
	s *Server
	// amend, when the client's authorization took something out of the
	// request, puts the denials back into the answer (authz.go).
	amend func(kmsg.Response)
	// finish, when r is a fetch of a fetch session, filters the answer
	// through the session, after amend (fetch_sessions.go).
	finish func(kmsg.Response)
}

// Respond answers r with resp, amended for the client's authorization
// and filtered through its fetch session.
func (r *request) Respond(resp kmsg.Response) {
	if r.amend != nil {
		r.amend(resp)
	}
	if r.finish != nil {
		r.finish(resp)
	}
	r.Request.Respond(resp)
}

// hangUp ends r without an answer and closes the connection once the
// answers owed before r are written: what a broker that cannot answer does
// (Kafka after a failed acks=0 produce; here, a forward upstream failed).
// The client sees its connection drop and retries.
func (r *request) hangUp(err error) {
	r.Logger().Info("closing the client connection", zap.Error(err))
	r.HangUp()
}
