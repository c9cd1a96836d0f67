package kafkanet

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/sasl"
	"github.com/gopurgatory/purgatory/operation"
)

// saslMaxReceive bounds a request read before its connection has
// authenticated (Kafka's sasl.server.max.receive.size): an unauthenticated
// client is not read 100 MiB.
const saslMaxReceive = 512 << 10

// authState is a SASL connection's authentication (Kafka's
// SaslServerAuthenticator): before a session, only ApiVersions,
// SaslHandshake and SaslAuthenticate are served; a handshake picks a
// mechanism, SaslAuthenticate requests carry its exchange until it ends;
// then the connection is served as its principal until the session
// expires (connections.max.reauth.ms), before which the client starts a
// new handshake on the same connection (KIP-368). A failed exchange is
// answered after connection.failed.authentication.delay.ms, then the
// connection closes. The reader's alone.
type authState struct {
	exchange  sasl.Exchange // the exchange under way, after a handshake
	mechanism string
	session   bool      // authenticated
	expiry    time.Time // the session's end; zero: none
	failed    bool      // a failed exchange is being answered: read no more
}

// errAuthentication closes a SASL connection that sent a request other
// than ApiVersions before it authenticated, or after its session expired.
var errAuthentication = errors.New("authentication required")

// maxFrame is the largest request c reads: socket.request.max.bytes, or
// sasl.server.max.receive.size before a SASL connection authenticated.
func (c *Conn) maxFrame() int32 {
	if c.auth != nil && !c.auth.session {
		return min(c.s.cfg.requestMaxBytes, saslMaxReceive)
	}
	return c.s.cfg.requestMaxBytes
}

// admitAuth checks that r may be served on c as its authentication
// stands; an error closes the connection, as Kafka closes it
// (IllegalSaslStateException, or an expired session).
func (c *Conn) admitAuth(r *Request) error {
	if c.auth == nil {
		return nil
	}
	switch kmsg.Key(r.Msg.Key()) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return nil
	}
	switch a := c.auth; {
	case !a.session:
		return fmt.Errorf("%w: %s before authenticating", errAuthentication, kmsg.NameForKey(r.Msg.Key()))
	case !a.expiry.IsZero() && time.Now().After(a.expiry):
		return fmt.Errorf("%w: %s after the session expired (connections.max.reauth.ms %v)",
			errAuthentication, kmsg.NameForKey(r.Msg.Key()), c.s.cfg.reauthAfter)
	}
	return nil
}

// authenticates reports whether r is the connection's own to answer.
func (c *Conn) authenticates(r *Request) bool {
	if c.auth == nil {
		return false
	}
	k := kmsg.Key(r.Msg.Key())
	return k == kmsg.SASLHandshake || k == kmsg.SASLAuthenticate
}

// authenticate answers a SaslHandshake or a SaslAuthenticate request.
func (c *Conn) authenticate(r *Request) {
	switch req := r.Msg.(type) {
	case *kmsg.SASLHandshakeRequest:
		c.handshake(r, req)
	case *kmsg.SASLAuthenticateRequest:
		c.step(r, req)
	}
}

func (c *Conn) handshake(r *Request, req *kmsg.SASLHandshakeRequest) {
	a := c.auth
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.s.cfg.sasl.Mechanisms()
	if req.Version == 0 {
		// After a v0 handshake a client sends bare SASL tokens, not
		// SaslAuthenticate requests: not served. v0 is still listed, as
		// Kafka lists it, because librdkafka requires it to be before
		// it uses v1 with SaslAuthenticate.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		c.s.metrics.authentication("unknown", "unsupported_version")
		r.respondThenClose(resp)
		return
	}
	if a.exchange != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.s.metrics.authentication(a.mechanism, "illegal_state")
		r.respondThenClose(resp)
		return
	}
	ex, err := c.s.cfg.sasl.Start(req.Mechanism)
	if err != nil {
		// Kafka answers, then closes: no delay, no credentials tried.
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.s.metrics.authentication("unknown", "unsupported_mechanism") // the client's word: not a label
		r.respondThenClose(resp)
		return
	}
	a.exchange, a.mechanism = ex, req.Mechanism
	r.Respond(resp)
}

func (c *Conn) step(r *Request, req *kmsg.SASLAuthenticateRequest) {
	a := c.auth
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if a.exchange == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake"
		resp.ErrorMessage = &msg
		c.s.metrics.authentication("", "illegal_state")
		r.respondThenClose(resp)
		return
	}
	out, done, err := a.exchange.Step(req.SASLAuthBytes)
	if err == nil && done && a.session && a.exchange.Principal() != c.Principal() {
		err = fmt.Errorf("re-authentication as %s on a connection of %s", a.exchange.Principal(), c.Principal())
	}
	if err != nil {
		c.failAuthentication(r, resp, err)
		return
	}
	resp.SASLAuthBytes = out
	if done {
		c.setPrincipal(a.exchange.Principal())
		a.exchange, a.session, a.expiry = nil, true, time.Time{}
		if d := c.s.cfg.reauthAfter; d > 0 {
			a.expiry = time.Now().Add(d)
			if req.Version >= 1 {
				resp.SessionLifetimeMillis = d.Milliseconds()
			}
		}
		c.s.metrics.authentication(a.mechanism, "success")
	}
	r.Respond(resp)
}

// failAuthentication answers r with SASL_AUTHENTICATION_FAILED after
// connection.failed.authentication.delay.ms, through a delayed operation
// (the connection's own, under its key), and closes the connection once
// it is written; the reader reads nothing more meanwhile (a.failed). The
// client learns nothing from the answer's timing or its message (which
// never says whether the user exists).
func (c *Conn) failAuthentication(r *Request, resp *kmsg.SASLAuthenticateResponse, err error) {
	a := c.auth
	a.failed = true
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mechanism
	resp.ErrorMessage = &msg
	c.s.metrics.authentication(a.mechanism, "failure")
	c.s.log.Debug("authentication failed", zap.Stringer("client", c.remote), zap.String("mechanism", a.mechanism), zap.Error(err))
	answer := func() { r.respondThenClose(resp) }
	op := operation.NewFunc(nil, answer, nil)
	if _, err := c.s.authDelays.TryCompleteElseWatchContext(c.ctx, op, c.s.cfg.authDelay, c); err != nil {
		answer() // the server is closing: answer now
	}
}
