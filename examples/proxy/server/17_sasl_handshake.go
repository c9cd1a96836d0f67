package server

// SaslHandshake: v0-v1; SaslAuthenticate: v0-v2.
//
// The proxy terminates its clients' SASL: on a SASL listener the network
// layer answers both itself (package kafkanet), against the users of
// sasl.users.file, and the client is the principal it authenticated as;
// upstream, the proxy is itself (upstream.sasl.*). These handlers see
// only the requests of a listener without SASL, answered
// ILLEGAL_SASL_STATE as Kafka answers them. Both are the proxy's own,
// never forwarded: their versions are listed as the proxy's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	serve(kmsg.SASLHandshake, 0, 1, (*Server).handleSASLOutOfPlace).Handler.local = true
	serve(kmsg.SASLAuthenticate, 0, 2, (*Server).handleSASLOutOfPlace).Handler.local = true
}

// handleSASLOutOfPlace answers a SASL request on a listener without SASL.
func (s *Server) handleSASLOutOfPlace(r *request) {
	switch resp := r.Msg.ResponseKind().(type) {
	case *kmsg.SASLHandshakeResponse:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = s.cfg.SASLMechanisms
		r.Respond(resp)
	case *kmsg.SASLAuthenticateResponse:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "this listener does not authenticate with SASL"
		resp.ErrorMessage = &msg
		r.Respond(resp)
	}
}
