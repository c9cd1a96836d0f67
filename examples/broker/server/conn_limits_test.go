package server

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// refused returns how many refusals of reason the broker counted.
func refused(s *Server, reason string) float64 {
	return testutil.ToFloat64(s.refusals.counter.WithLabelValues(reason))
}

// writeRaw writes b on c as it is.
func (c *rawConn) writeRaw(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(b)
	require.NoError(c.t, err)
}

// TestRequestBufferGrowsAsBytesArrive: a length prefix claiming 100 MiB
// followed by 10 bytes costs the broker its first chunk, not 100 MiB.
func TestRequestBufferGrowsAsBytesArrive(t *testing.T) {
	s := newTestServer(t)
	var conns []*rawConn
	for range 20 {
		c := dialRaw(t, s)
		c.writeRaw(append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 10)...))
		conns = append(conns, c)
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == int64(len(conns)*firstChunk) },
		5*time.Second, time.Millisecond, "each holds its first chunk")
	// The broker serves others meanwhile.
	dialRaw(t, s).roundTrip(kmsg.NewPtrApiVersionsRequest())
	for _, c := range conns {
		require.NoError(t, c.nc.Close())
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "given back when they go")
}

// TestSlowSenderClosed: a client that stops in the middle of a request,
// its size or its body, is closed after socket.read.timeout.ms; one that
// is idle between requests is not.
func TestSlowSenderClosed(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.SocketReadTimeout = 200 * time.Millisecond })
	tests := []struct {
		name string
		sent []byte
	}{
		{"part of the size", []byte{0, 0}},
		{"part of the body", append(binary.BigEndian.AppendUint32(nil, 100), 0, 18, 0, 0)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, s)
			c.writeRaw(tt.sent)
			assert.True(t, c.closedByPeer(), "closed")
			assert.Equal(t, float64(i+1), refused(s, refuseSlowRequest))
			require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "its buffer given back")
		})
	}
	idle := dialRaw(t, s)
	idle.roundTrip(kmsg.NewPtrApiVersionsRequest())
	time.Sleep(3 * s.cfg.SocketReadTimeout) // idle, not slow: between requests
	idle.roundTrip(kmsg.NewPtrApiVersionsRequest())
}

// TestMemoryBudgetStopsReading: with queued.max.request.bytes spent, a
// connection is not read (its request waits, unanswered) until bytes are
// given back; the request holding the overdraft goes on meanwhile.
func TestMemoryBudgetStopsReading(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QueuedMaxRequestBytes = 64 << 10 })
	big := dialRaw(t, s)
	// A 1 MiB request, 100 KiB of it sent: past the budget, it holds the
	// overdraft.
	big.writeRaw(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 100<<10)...))
	require.Eventually(t, func() bool { return s.mem.inUse() >= 100<<10 }, 5*time.Second, time.Millisecond)

	small := dialRaw(t, s)
	corr := small.send(kmsg.NewPtrApiVersionsRequest())
	require.Eventually(t, func() bool { return s.mem.waiting() == 1 }, 5*time.Second, time.Millisecond, "the small request waits for memory")

	require.NoError(t, big.nc.Close()) // the overdraft is given back
	resp := kmsg.NewPtrApiVersionsResponse()
	assert.Equal(t, corr, small.recv(resp), "then it is read and answered")
}

// TestMaxConnections: past max.connections, and past
// max.connections.per.ip from one host, a new connection is closed at
// once and counted; one that goes makes room.
func TestMaxConnections(t *testing.T) {
	tests := []struct {
		name   string
		tweak  func(*Config)
		reason string
	}{
		{"max.connections", func(c *Config) { c.MaxConnections = 2 }, refuseMaxConnections},
		{"max.connections.per.ip", func(c *Config) { c.MaxConnectionsPerIP = 2 }, refuseMaxConnectionsPerIP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, tt.tweak)
			first, second := dialRaw(t, s), dialRaw(t, s)
			first.roundTrip(kmsg.NewPtrApiVersionsRequest())
			second.roundTrip(kmsg.NewPtrApiVersionsRequest())
			third := dialRaw(t, s)
			assert.True(t, third.closedByPeer(), "the third is closed")
			assert.Equal(t, 1.0, refused(s, tt.reason))

			require.NoError(t, first.nc.Close())
			require.Eventually(t, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.conns) == 1
			}, 5*time.Second, time.Millisecond)
			dialRaw(t, s).roundTrip(kmsg.NewPtrApiVersionsRequest())
		})
	}
}

// failingListener fails its first Accepts as a listener out of file
// descriptors does.
type failingListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsAreRetried: accept errors (too many open files) are
// counted and retried after a backoff; the broker goes on serving.
func TestAcceptErrorsAreRetried(t *testing.T) {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	s, err := New(cfg, nil)
	require.NoError(t, err)
	ln := &failingListener{Listener: s.ln}
	ln.failures.Store(5)
	s.ln = ln
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		require.NoError(t, s.Close(t.Context()))
		require.NoError(t, <-served)
	})
	dialRaw(t, s).roundTrip(kmsg.NewPtrApiVersionsRequest())
	assert.Equal(t, 5.0, refused(s, refuseAcceptError))
	select {
	case err := <-served:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}

// TestAcceptBackoffStopsOnClose: a broker backing off after accept errors
// closes at once.
func TestAcceptBackoffStopsOnClose(t *testing.T) {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	s, err := New(cfg, nil)
	require.NoError(t, err)
	ln := &failingListener{Listener: s.ln}
	ln.failures.Store(1 << 30)
	s.ln = ln
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	require.Eventually(t, func() bool { return refused(s, refuseAcceptError) >= 8 }, 10*time.Second, time.Millisecond,
		"backing off, up to a second")
	start := time.Now()
	require.NoError(t, s.Close(t.Context()))
	require.NoError(t, <-served)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "the backoff does not hold Close")
}

// TestWaitingRequestHoldsNoBudget: a long poll, once handled, holds none
// of queued.max.request.bytes while it waits: what waits long (a fetch, a
// join through a rebalance) cannot keep the budget, or its overdraft, from
// the readers.
func TestWaitingRequestHoldsNoBudget(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "quiet", 1)
	c := dialRaw(t, s)
	corr := c.send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}))
	require.Eventually(t, func() bool { return s.fetches.Delayed() == 1 }, 5*time.Second, time.Millisecond, "the fetch waits")
	assert.Equal(t, int64(0), s.mem.inUse(), "holding none of the budget")
	appendValues(t, topic.Partitions[0], "wake")
	s.wake(topic.Partitions[0])
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	assert.Equal(t, corr, c.recv(resp))
}
