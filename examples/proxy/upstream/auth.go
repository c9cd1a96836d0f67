package upstream

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// ErrAuthentication is wrapped when an upstream broker refused the
// proxy's TLS handshake or its SASL credentials: the dial fails, and is
// retried after the reconnect backoff.
var ErrAuthentication = errors.New("upstream: authentication failed")

// WithTLS speaks TLS to the upstream brokers with cfg
// (upstream.security.protocol SSL or SASL_SSL); its ServerName, if empty,
// is each broker's host.
func WithTLS(cfg *tls.Config) Option { return optionFunc(func(c *config) { c.tls = cfg }) }

// WithSASL authenticates every upstream connection with m before anything
// else is sent on it (SASL_PLAINTEXT or SASL_SSL): SaslHandshake v1, then
// SaslAuthenticate until m is done, as Kafka's clients do. m is one of
// franz-go's client mechanisms (pkg/sasl/plain, pkg/sasl/scram).
func WithSASL(m sasl.Mechanism) Option { return optionFunc(func(c *config) { c.sasl = m }) }

// secure runs the TLS handshake and the SASL exchange a new connection to
// addr needs, within the dial timeout, and returns the connection to use.
// An upstream session's lifetime (KIP-368's session_lifetime_ms) is not
// followed: a broker with connections.max.reauth.ms closes the
// connection when it ends, and the next request dials again.
func (cl *Cluster) secure(nc net.Conn, addr string) (net.Conn, error) {
	deadline := time.Now().Add(cl.cfg.dialTimeout)
	_ = nc.SetDeadline(deadline)
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	if cl.cfg.tls != nil {
		cfg := cl.cfg.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(cl.ctx); err != nil {
			return nil, fmt.Errorf("%w: TLS handshake with %s: %w", ErrAuthentication, addr, err)
		}
		nc = tc
		_ = nc.SetDeadline(deadline)
	}
	if cl.cfg.sasl != nil {
		ctx, cancel := context.WithDeadline(cl.ctx, deadline)
		defer cancel()
		if err := cl.authenticate(ctx, nc, addr); err != nil {
			return nil, err
		}
	}
	return nc, nil
}

// authenticate runs the SASL exchange on nc, request by request.
func (cl *Cluster) authenticate(ctx context.Context, nc net.Conn, addr string) error {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(cl.cfg.clientID))
	var corr int32
	roundTrip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		if _, err := nc.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return nil, err
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n < 4 || n > 1<<20 {
			return nil, fmt.Errorf("%w: a SASL answer of %d bytes", ErrProtocol, n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(nc, body); err != nil {
			return nil, err
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != corr {
			return nil, fmt.Errorf("%w: correlation id %d, want %d", ErrProtocol, got, corr)
		}
		return decode(req, body[4:])
	}
	m := cl.cfg.sasl
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := roundTrip(hs)
	if err != nil {
		return fmt.Errorf("%w: SaslHandshake with %s: %w", ErrAuthentication, addr, err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("%w: %s at %s: %w (it offers %v)", ErrAuthentication, m.Name(), addr, kerr.ErrorForCode(code),
			resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	sess, msg, err := m.Authenticate(ctx, addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAuthentication, m.Name(), err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = msg
		resp, err := roundTrip(req)
		if err != nil {
			return fmt.Errorf("%w: SaslAuthenticate with %s: %w", ErrAuthentication, addr, err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			detail := ""
			if ar.ErrorMessage != nil {
				detail = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("%w: %s at %s: %w%s", ErrAuthentication, m.Name(), addr, kerr.ErrorForCode(ar.ErrorCode), detail)
		}
		var done bool
		if done, msg, err = sess.Challenge(ar.SASLAuthBytes); err != nil {
			return fmt.Errorf("%w: %s at %s: %w", ErrAuthentication, m.Name(), addr, err)
		}
		if done {
			return nil
		}
	}
}
