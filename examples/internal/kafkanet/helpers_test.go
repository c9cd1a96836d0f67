package kafkanet

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet/kafkanettest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// apiVersions is the Handler of the tests: it serves ApiVersions v0 to v4,
// answered at once, as the broker and the proxy do.
type apiVersions struct{}

func (apiVersions) Supports(key, version int16) bool {
	return kmsg.Key(key) == kmsg.ApiVersions && version >= 0 && version <= 4
}

func (apiVersions) ServeKafka(r *Request) {
	resp := kmsg.NewPtrApiVersionsResponse()
	if r.ClientVersion > 4 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: int16(kmsg.ApiVersions), MinVersion: 0, MaxVersion: 4}}
	r.Respond(resp)
}

// testServer is a Server with the listener it serves.
type testServer struct {
	*Server
	ln *Listener
}

// newUnservedServer returns a server of apiVersions on a free loopback
// port, not serving yet.
func newUnservedServer(t *testing.T, opts ...Option) *testServer {
	t.Helper()
	return newUnservedServerOf(t, apiVersions{}, opts...)
}

// newUnservedServerOf is newUnservedServer of handler h.
func newUnservedServerOf(t *testing.T, h Handler, opts ...Option) *testServer {
	t.Helper()
	s, err := New(h, opts...)
	require.NoError(t, err)
	ln, err := s.Listen("127.0.0.1:0", "")
	require.NoError(t, err)
	return &testServer{Server: s, ln: ln}
}

// newTestServer returns a server of apiVersions serving on a free
// loopback port, closed at the end of the test.
func newTestServer(t *testing.T, opts ...Option) *testServer {
	t.Helper()
	return newTestServerOf(t, apiVersions{}, opts...)
}

// newTestServerOf is newTestServer of handler h.
func newTestServerOf(t *testing.T, h Handler, opts ...Option) *testServer {
	t.Helper()
	s := newUnservedServerOf(t, h, opts...)
	served := make(chan error, 1)
	go func() { served <- s.Serve(s.ln) }()
	t.Cleanup(func() {
		s.close(t)
		require.NoError(t, <-served)
	})
	return s
}

// close shuts s down as its owner does: stop accepting, drain the
// connections.
func (s *testServer) close(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close())
	s.Drain(ctx)
}

// dialRaw connects a raw client to s.
func dialRaw(t *testing.T, s *testServer) *kafkanettest.Client {
	t.Helper()
	return kafkanettest.Dial(t, s.ln.Addr().String())
}

// refused returns how many refusals of reason the server counted.
func refused(s *testServer, reason string) float64 {
	return testutil.ToFloat64(s.refusals.counter.WithLabelValues(reason))
}
