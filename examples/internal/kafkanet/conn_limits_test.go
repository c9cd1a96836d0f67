package kafkanet

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet/kafkanettest"
)

// TestRequestBufferGrowsAsBytesArrive: a length prefix claiming 100 MiB
// followed by 10 bytes costs the server its first chunk, not 100 MiB.
func TestRequestBufferGrowsAsBytesArrive(t *testing.T) {
	s := newTestServer(t)
	var conns []*kafkanettest.Client
	for range 20 {
		c := dialRaw(t, s)
		c.WriteRaw(append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 10)...))
		conns = append(conns, c)
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == int64(len(conns)*firstChunk) },
		5*time.Second, time.Millisecond, "each holds its first chunk")
	// The server serves others meanwhile.
	dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest())
	for _, c := range conns {
		require.NoError(t, c.NC.Close())
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "given back when they go")
}

// TestSlowSenderClosed: a client that stops in the middle of a request,
// its size or its body, is closed after socket.read.timeout.ms; one that
// is idle between requests is not.
func TestSlowSenderClosed(t *testing.T) {
	s := newTestServer(t, WithReadTimeout(200*time.Millisecond))
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
			c.WriteRaw(tt.sent)
			assert.True(t, c.ClosedByPeer(), "closed")
			assert.Equal(t, float64(i+1), refused(s, refuseSlowRequest))
			require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "its buffer given back")
		})
	}
	idle := dialRaw(t, s)
	idle.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	time.Sleep(3 * s.cfg.readTimeout) // idle, not slow: between requests
	idle.RoundTrip(kmsg.NewPtrApiVersionsRequest())
}

// TestMemoryBudgetStopsReading: with queued.max.request.bytes spent, a
// connection is not read (its request waits, unanswered) until bytes are
// given back; the request holding the overdraft goes on meanwhile. The
// reader that stops is counted and logged, and shows in the readers
// waiting gauge.
func TestMemoryBudgetStopsReading(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	reg := prometheus.NewPedanticRegistry()
	s := newTestServer(t, WithMemoryBudget(64<<10), WithMemoryShares(-1, -1), WithLogger(zap.New(core)), WithRegisterer(reg))
	big := dialRaw(t, s)
	// A 1 MiB request, 100 KiB of it sent: past the budget, it holds the
	// overdraft.
	big.WriteRaw(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 100<<10)...))
	require.Eventually(t, func() bool { return s.mem.inUse() >= 100<<10 }, 5*time.Second, time.Millisecond)

	small := dialRaw(t, s)
	corr := small.Send(kmsg.NewPtrApiVersionsRequest())
	require.Eventually(t, func() bool { return s.mem.waiting() == 1 }, 5*time.Second, time.Millisecond, "the small request waits for memory")
	assert.Equal(t, 1.0, refused(s, refuseMemoryWait), "the reader's stop is counted")
	assert.Equal(t, 1, logs.FilterField(zap.String("reason", refuseMemoryWait)).Len(), "and logged")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(readersWaitingMetric(1, 0)), "kafka_readers_waiting"))

	require.NoError(t, big.NC.Close()) // the overdraft is given back
	resp := kmsg.NewPtrApiVersionsResponse()
	assert.Equal(t, corr, small.Recv(resp), "then it is read and answered")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(readersWaitingMetric(0, 0)), "kafka_readers_waiting"))
}

// readersWaitingMetric is the readers waiting gauge's exposition, with
// budget readers waiting for the budget and host for their host's share.
func readersWaitingMetric(budget, host int) string {
	return fmt.Sprintf(`# HELP kafka_readers_waiting Connections whose reader has stopped reading its socket to wait for memory, by the limit it waits on.
# TYPE kafka_readers_waiting gauge
kafka_readers_waiting{limit="queued.max.request.bytes"} %d
kafka_readers_waiting{limit="queued.max.request.bytes.per.ip"} %d
`, budget, host)
}

// TestMaxConnections: past max.connections, and past
// max.connections.per.ip from one host, a new connection is closed at
// once and counted; one that goes makes room.
func TestMaxConnections(t *testing.T) {
	tests := []struct {
		name   string
		limit  Option
		reason string
	}{
		{"max.connections", WithMaxConnections(2, math.MaxInt), refuseMaxConnections},
		{"max.connections.per.ip", WithMaxConnections(math.MaxInt, 2), refuseMaxConnectionsPerIP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, tt.limit)
			first, second := dialRaw(t, s), dialRaw(t, s)
			first.RoundTrip(kmsg.NewPtrApiVersionsRequest())
			second.RoundTrip(kmsg.NewPtrApiVersionsRequest())
			third := dialRaw(t, s)
			assert.True(t, third.ClosedByPeer(), "the third is closed")
			assert.Equal(t, 1.0, refused(s, tt.reason))

			require.NoError(t, first.NC.Close())
			require.Eventually(t, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.conns) == 1
			}, 5*time.Second, time.Millisecond)
			dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest())
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
// counted and retried after a backoff; the server goes on serving.
func TestAcceptErrorsAreRetried(t *testing.T) {
	s := newUnservedServer(t)
	ln := &failingListener{Listener: s.ln}
	ln.failures.Store(5)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.close(t)
		require.NoError(t, <-served)
	})
	dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest())
	assert.Equal(t, 5.0, refused(s, refuseAcceptError))
	select {
	case err := <-served:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}

// TestAcceptBackoffStopsOnClose: a server backing off after accept errors
// closes at once.
func TestAcceptBackoffStopsOnClose(t *testing.T) {
	s := newUnservedServer(t)
	ln := &failingListener{Listener: s.ln}
	ln.failures.Store(1 << 30)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	require.Eventually(t, func() bool { return refused(s, refuseAcceptError) >= 8 }, 10*time.Second, time.Millisecond,
		"backing off, up to a second")
	start := time.Now()
	s.close(t)
	require.NoError(t, <-served)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "the backoff does not hold Close")
}

// lateAnswers is apiVersions answering each request 150 ms after it
// arrives, from another goroutine, as a delayed operation does.
type lateAnswers struct{ apiVersions }

func (h lateAnswers) ServeKafka(r *Request) {
	time.AfterFunc(150*time.Millisecond, func() { h.apiVersions.ServeKafka(r) })
}

// TestSlowSenderClosedAfterALateAnswer: a client that begins a request and
// stalls is closed after socket.read.timeout.ms even when the answer to
// its previous request is written meanwhile (the writer, with nothing more
// owed, starts the idle time: it must not replace the stalled frame's
// deadline with connections.max.idle.ms).
func TestSlowSenderClosedAfterALateAnswer(t *testing.T) {
	s := newTestServerOf(t, lateAnswers{}, WithReadTimeout(300*time.Millisecond), WithIdleTimeout(time.Minute))

	c := dialRaw(t, s)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	c.WriteRaw(append(frame, 0, 0)) // the first request whole, then two bytes of a second's size
	start := time.Now()
	resp := kmsg.NewPtrApiVersionsResponse()
	assert.Equal(t, int32(1), c.Recv(resp), "the first is answered, late")
	assert.True(t, c.ClosedByPeer(), "then the stalled second closes the connection")
	assert.Less(t, time.Since(start), 5*time.Second, "after socket.read.timeout.ms, not connections.max.idle.ms")
	assert.Equal(t, 1.0, refused(s, refuseSlowRequest))
}
