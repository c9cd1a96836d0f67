package kafkanet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ctxHandler answers ApiVersions as apiVersions does, recording what its
// requests' contexts carry.
type ctxHandler struct {
	apiVersions
	seen atomic.Value // the value of connKey in the last request's context
}

type connKey struct{}

func (h *ctxHandler) ServeKafka(r *Request) {
	h.seen.Store(r.Context().Value(connKey{}))
	h.apiVersions.ServeKafka(r)
}

// TestConnHooks: WithConnContext's context is every request's of the
// connection, and WithConnClosed runs once the connection has closed, its
// context cancelled, before Drain returns.
func TestConnHooks(t *testing.T) {
	var (
		closed    atomic.Int32
		cancelled atomic.Bool
	)
	h := &ctxHandler{}
	s, err := New(h,
		WithConnContext(func(ctx context.Context, c *Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c.RemoteAddr().String())
		}),
		WithConnClosed(func(c *Conn) {
			closed.Add(1)
			cancelled.Store(c.Context().Err() != nil)
		}))
	require.NoError(t, err)
	ln, err := s.Listen("127.0.0.1:0", "")
	require.NoError(t, err)
	ts := &testServer{Server: s, ln: ln}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	c := dialRaw(t, ts)
	c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	assert.Equal(t, c.NC.LocalAddr().String(), h.seen.Load(), "the request's context is the connection's")
	require.NoError(t, c.NC.Close())
	require.Eventually(t, func() bool { return closed.Load() == 1 }, 5*time.Second, time.Millisecond,
		"WithConnClosed runs when the client goes")
	assert.True(t, cancelled.Load(), "after the connection's context is cancelled")

	other := dialRaw(t, ts)
	other.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	ts.close(t)
	require.NoError(t, <-served)
	assert.Equal(t, int32(2), closed.Load(), "a connection drained is closed before Drain returns, once")
}

// writtenHandler answers ApiVersions as apiVersions does, counting the
// answers OnWritten saw written.
type writtenHandler struct {
	apiVersions
	written atomic.Int32
}

func (h *writtenHandler) ServeKafka(r *Request) {
	r.OnWritten(func() { h.written.Add(1) })
	h.apiVersions.ServeKafka(r)
}

// TestOnWritten: the callback runs once its answer is written, once per
// answer, whether the reader or the writer wrote it.
func TestOnWritten(t *testing.T) {
	h := &writtenHandler{}
	s := newTestServerOf(t, h)
	c := dialRaw(t, s)
	for range 3 {
		c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	}
	c.SendTogether(kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsRequest())
	c.Recv(kmsg.NewPtrApiVersionsResponse())
	c.Recv(kmsg.NewPtrApiVersionsResponse())
	require.Eventually(t, func() bool { return h.written.Load() == 5 }, 5*time.Second, time.Millisecond)
}
