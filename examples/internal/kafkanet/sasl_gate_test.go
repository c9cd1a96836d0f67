package kafkanet

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap/zaptest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/sasl"
	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// secureHandler serves what a client needs to connect and ping
// (ApiVersions, Metadata), declares SaslHandshake and SaslAuthenticate,
// which the connection answers itself on SASL listeners, and records the
// principal its Metadata requests came from.
type secureHandler struct {
	mu         sync.Mutex
	principals []string
}

var secureAPIs = map[kmsg.Key][2]int16{kmsg.ApiVersions: {0, 4}, kmsg.Metadata: {0, 12},
	kmsg.SASLHandshake: {0, 1}, kmsg.SASLAuthenticate: {0, 2}}

func (*secureHandler) Supports(key, version int16) bool {
	r, ok := secureAPIs[kmsg.Key(key)]
	return ok && version >= r[0] && version <= r[1]
}

func (h *secureHandler) ServeKafka(r *Request) {
	switch req := r.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		if r.ClientVersion > secureAPIs[kmsg.ApiVersions][1] {
			resp.ErrorCode = kerr.UnsupportedVersion.Code // read as v0: the client tries again lower
		}
		for k, v := range secureAPIs {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: v[0], MaxVersion: v[1]})
		}
		r.Respond(resp)
	case *kmsg.MetadataRequest:
		h.mu.Lock()
		h.principals = append(h.principals, r.Principal())
		h.mu.Unlock()
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		host, port := r.Conn().Listener().Advertised()
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: port}}
		resp.ControllerID = 1
		r.Respond(resp)
	default:
		panic("the connection answers SASL requests on SASL listeners")
	}
}

func (h *secureHandler) lastPrincipal() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.principals) == 0 {
		return ""
	}
	return h.principals[len(h.principals)-1]
}

// users is a sasl.Store of fixed credentials.
type users map[[2]string]sasl.Credential

func (u users) Credential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := u[[2]string{user, mechanism}]
	return c, ok
}

func testUsers(t *testing.T) users {
	u := users{}
	for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		c, err := sasl.NewCredential(m, "alice-secret", 0)
		require.NoError(t, err)
		u[[2]string{"alice", m}] = c
	}
	return u
}

// newSecureServer serves h on a listener of protocol, with SASL against
// testUsers and the options given; tlsCfg for TLS protocols.
func newSecureServer(t *testing.T, h Handler, protocol SecurityProtocol, tlsCfg *tls.Config, opts ...Option) *testServer {
	t.Helper()
	a, err := sasl.New(testUsers(t), sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512)
	require.NoError(t, err)
	s, err := New(h, append([]Option{WithSASL(a, 100*time.Millisecond, 0), WithLogger(zaptest.NewLogger(t))}, opts...)...)
	require.NoError(t, err)
	ln, err := s.ListenWith(ListenerConfig{Name: "SECURE", Protocol: protocol, Addr: "127.0.0.1:0", TLS: tlsCfg})
	require.NoError(t, err)
	ts := &testServer{Server: s, ln: ln}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ts.close(t)
		require.NoError(t, <-served)
	})
	return ts
}

func ping(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func authentications(s *testServer, mechanism, result string) float64 {
	return testutil.ToFloat64(s.metrics.auths.WithLabelValues(mechanism, result))
}

// TestSASLMechanisms: franz-go's clients authenticate with each mechanism
// and are served as their principal; wrong credentials are refused with
// SASL_AUTHENTICATION_FAILED, no sooner than the delay.
func TestSASLMechanisms(t *testing.T) {
	h := &secureHandler{}
	s := newSecureServer(t, h, SASLPlaintext, nil)
	addr := s.ln.Addr().String()
	for _, m := range []kgosasl.Mechanism{
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
	} {
		require.NoError(t, ping(t, addr, kgo.SASL(m)), m.Name())
		assert.Equal(t, "User:alice", h.lastPrincipal(), m.Name())
		assert.Equal(t, 1.0, authentications(s, m.Name(), "success"), m.Name())
	}
	for _, m := range []kgosasl.Mechanism{
		scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(),
		scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism(),
		plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(),
	} {
		start := time.Now()
		err := ping(t, addr, kgo.SASL(m))
		require.Error(t, err, m.Name())
		assert.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "%s: %v", m.Name(), err)
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "answered after connection.failed.authentication.delay.ms")
	}
	assert.Equal(t, 3.0, authentications(s, sasl.ScramSHA256, "success")+authentications(s, sasl.ScramSHA512, "success")+
		authentications(s, sasl.Plain, "success"))
	assert.Equal(t, 3.0, authentications(s, sasl.ScramSHA256, "failure")+authentications(s, sasl.ScramSHA512, "failure")+
		authentications(s, sasl.Plain, "failure"))
}

// TestSASLRequiredFirst: on a SASL listener, a request other than
// ApiVersions before authenticating closes the connection, counted; an
// unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with the
// mechanisms enabled, then closed; SaslAuthenticate before a handshake is
// ILLEGAL_SASL_STATE.
func TestSASLRequiredFirst(t *testing.T) {
	s := newSecureServer(t, &secureHandler{}, SASLPlaintext, nil)

	c := dialRaw(t, s)
	av := c.RoundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	assert.Zero(t, av.ErrorCode, "ApiVersions is served before authenticating")
	c.Send(kmsg.NewPtrMetadataRequest())
	assert.True(t, c.ClosedByPeer(), "Metadata before authenticating")
	assert.Equal(t, 1.0, refused(s, refuseUnauthenticated))

	c = dialRaw(t, s)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	resp := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse)
	assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
	assert.ElementsMatch(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, resp.SupportedMechanisms)
	assert.True(t, c.ClosedByPeer())

	c = dialRaw(t, s)
	au := c.RoundTrip(kmsg.NewPtrSASLAuthenticateRequest()).(*kmsg.SASLAuthenticateResponse)
	assert.Equal(t, kerr.IllegalSaslState.Code, au.ErrorCode)
	assert.True(t, c.ClosedByPeer())
}

// TestSASLLargeRequestBeforeAuthentication: a client that has not
// authenticated is not read past sasl.server.max.receive.size.
func TestSASLLargeRequestBeforeAuthentication(t *testing.T) {
	s := newSecureServer(t, &secureHandler{}, SASLPlaintext, nil)
	c := dialRaw(t, s)
	c.WriteRaw([]byte{0, 0x10, 0, 0}) // 1 MiB claimed
	assert.True(t, c.ClosedByPeer())
	assert.Equal(t, 1.0, refused(s, refuseRequestTooLarge))
}

// TestSASLReauthentication: with connections.max.reauth.ms, a session's
// lifetime is given to the client (KIP-368), franz-go authenticates again
// on its connection before it ends and goes on being served; a client
// that does not is closed at its next request.
func TestSASLReauthentication(t *testing.T) {
	a, err := sasl.New(testUsers(t), sasl.ScramSHA256)
	require.NoError(t, err)
	h := &secureHandler{}
	s := newSecureServer(t, h, SASLPlaintext, nil, WithSASL(a, 100*time.Millisecond, 300*time.Millisecond))
	addr := s.ln.Addr().String()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for authentications(s, sasl.ScramSHA256, "success") < 3 {
		require.NoError(t, cl.Ping(ctx))
		time.Sleep(50 * time.Millisecond) // the pace of the pings: the session expires between some
	}
	assert.Equal(t, 0.0, refused(s, refuseUnauthenticated), "the client authenticated again in time")

	c := dialRaw(t, s)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = sasl.ScramSHA256
	require.Zero(t, c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode)
	// The raw client's SCRAM exchange, by franz-go's mechanism.
	sess, msg, err := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism().Authenticate(ctx, addr)
	require.NoError(t, err)
	for done := false; !done; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = msg
		resp := c.RoundTrip(req).(*kmsg.SASLAuthenticateResponse)
		require.Zero(t, resp.ErrorCode)
		done, msg, err = sess.Challenge(resp.SASLAuthBytes)
		require.NoError(t, err)
		if done {
			assert.EqualValues(t, 300, resp.SessionLifetimeMillis)
		}
	}
	c.RoundTrip(kmsg.NewPtrMetadataRequest())
	time.Sleep(350 * time.Millisecond) // past the session's end
	c.Send(kmsg.NewPtrMetadataRequest())
	assert.True(t, c.ClosedByPeer(), "a request after the session expired")
	assert.Equal(t, 1.0, refused(s, refuseUnauthenticated))
}

// TestSASLFailuresDelayedTogether: forty connections failing at once
// each wait their delay in the purgatory, not a goroutine asleep, and a
// good client is served meanwhile. The delay (8s) leaves room for forty
// SCRAM exchanges under -race on a loaded machine to reach it together:
// with a hundred and 3s, the first failures were answered before the last
// had failed, once in a whole run of the repository's tests.
func TestSASLFailuresDelayedTogether(t *testing.T) {
	a, err := sasl.New(testUsers(t), sasl.ScramSHA256)
	require.NoError(t, err)
	s := newSecureServer(t, &secureHandler{}, SASLPlaintext, nil, WithSASL(a, 8*time.Second, 0))
	addr := s.ln.Addr().String()
	const bad = 40
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range bad {
		wg.Go(func() {
			if err := ping(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())); errors.Is(err, kerr.SaslAuthenticationFailed) {
				failed.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool { return s.authDelays.Pending() == bad }, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, ping(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())))
	assert.Equal(t, bad, s.authDelays.Pending(), "the good client was served while every failure still waited")
	wg.Wait()
	assert.EqualValues(t, bad, failed.Load())
}

// testTLS makes a CA, a server keystore for 127.0.0.1 and a client's, and
// returns the server's TLS configuration (ssl.client.auth as given) and
// the files.
func testTLS(t *testing.T, clientAuth string) (*tls.Config, tlsfiles.Files, tlsfiles.Files) {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsfiles.NewCA("test CA")
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	server, err := ca.Issue(pkix.Name{CommonName: "broker"}, "127.0.0.1")
	require.NoError(t, err)
	client, err := ca.Issue(pkix.Name{CommonName: "alice", Organization: []string{"purgatory"}})
	require.NoError(t, err)
	trust := write("ca.pem", ca.PEM)
	srvFiles := tlsfiles.Files{Keystore: write("broker.pem", server), Truststore: trust, ClientAuth: clientAuth}
	cfg, err := tlsfiles.ServerConfig(srvFiles, nil)
	require.NoError(t, err)
	return cfg, srvFiles, tlsfiles.Files{Keystore: write("alice.pem", client), Truststore: trust}
}

// TestTLSListeners: an SSL listener requiring client certificates serves
// a client as its certificate's subject and refuses one without; a
// SASL_SSL listener serves the SASL user; a plaintext client on a TLS
// listener is refused at its handshake.
func TestTLSListeners(t *testing.T) {
	srvCfg, _, clientFiles := testTLS(t, "required")
	h := &secureHandler{}
	s := newSecureServer(t, h, SSL, srvCfg)
	addr := s.ln.Addr().String()

	withCert, err := tlsfiles.ClientConfig(clientFiles)
	require.NoError(t, err)
	require.NoError(t, ping(t, addr, kgo.DialTLSConfig(withCert)))
	assert.Equal(t, "User:CN=alice,O=purgatory", h.lastPrincipal())

	noCert, err := tlsfiles.ClientConfig(tlsfiles.Files{Truststore: clientFiles.Truststore})
	require.NoError(t, err)
	assert.Error(t, ping(t, addr, kgo.DialTLSConfig(noCert)))
	assert.Error(t, ping(t, addr), "plaintext on a TLS listener")
	assert.Eventually(t, func() bool { return refused(s, refuseTLSHandshake) >= 2 }, 5*time.Second, 5*time.Millisecond)

	optional, _, optFiles := testTLS(t, "none")
	s2 := newSecureServer(t, h, SASLSSL, optional)
	trustOnly, err := tlsfiles.ClientConfig(tlsfiles.Files{Truststore: optFiles.Truststore})
	require.NoError(t, err)
	require.NoError(t, ping(t, s2.ln.Addr().String(), kgo.DialTLSConfig(trustOnly),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())))
	assert.Equal(t, "User:alice", h.lastPrincipal())
}

// TestListenerSettings: the protocol and its settings must agree.
func TestListenerSettings(t *testing.T) {
	s, err := New(apiVersions{})
	require.NoError(t, err)
	defer s.Drain(context.Background())
	_, err = s.ListenWith(ListenerConfig{Protocol: SSL, Addr: "127.0.0.1:0"})
	assert.ErrorContains(t, err, "no TLS configuration")
	_, err = s.ListenWith(ListenerConfig{Protocol: SASLPlaintext, Addr: "127.0.0.1:0"})
	assert.ErrorContains(t, err, "no SASL mechanisms")
	_, err = s.ListenWith(ListenerConfig{Protocol: Plaintext, Addr: "127.0.0.1:0", TLS: &tls.Config{}})
	assert.ErrorContains(t, err, "without TLS")
	_, err = s.ListenWith(ListenerConfig{Protocol: "SASL_FOO", Addr: "127.0.0.1:0"})
	assert.ErrorContains(t, err, "security protocol")
	ln, err := s.ListenWith(ListenerConfig{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	assert.Equal(t, "PLAINTEXT", ln.Name())
	assert.Equal(t, Plaintext, ln.Protocol())
}
