package server

// SaslHandshake: v0-v1; SaslAuthenticate: v0-v2.
//
// A SASL listener's connections authenticate before anything else, and
// the network layer answers both itself (package kafkanet, sasl_gate.go):
// these handlers see only the requests of the other listeners
// (PLAINTEXT, SSL), which Kafka answers ILLEGAL_SASL_STATE. A v0
// SaslHandshake, after which a client would send bare SASL tokens rather
// than SaslAuthenticate requests, is answered UNSUPPORTED_VERSION: v0 is
// listed only because librdkafka looks for it before it uses v1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.SASLHandshake, 0, 1, (*Server).handleSASLOutOfPlace)
	serve(kmsg.SASLAuthenticate, 0, 2, (*Server).handleSASLOutOfPlace)
}

// handleSASLOutOfPlace answers a SASL request on a listener without SASL.
func (s *Server) handleSASLOutOfPlace(r *kafkanet.Request) {
	resp := r.Msg.ResponseKind()
	switch resp := resp.(type) {
	case *kmsg.SASLHandshakeResponse:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = s.cfg.SASLMechanisms
	case *kmsg.SASLAuthenticateResponse:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = nilIfEmpty("this listener does not authenticate with SASL")
	}
	r.Respond(resp)
}
