package kafkanet

import (
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet/kafkanettest"
)

// sizePrefix is a frame's 4-byte size.
func sizePrefix(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// tricklers are hostile clients: each claims a large request, sends most
// of it, then a byte every 20 ms, never silent long enough to be closed
// for silence, until the test ends.
type tricklers struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// newTricklers returns the test's tricklers; they stop when it ends (their
// connections are closed first: a write blocked on a server that does not
// read returns then).
func newTricklers(t *testing.T) *tricklers {
	tr := &tricklers{stop: make(chan struct{})}
	t.Cleanup(func() {
		close(tr.stop)
		tr.wg.Wait()
	})
	return tr
}

// halfSend has c claim a request of size bytes, send sent of them, then
// trickle. Its writes may block (the server need not read them): they run
// on a goroutine of their own and end with the connection.
func (tr *tricklers) halfSend(c *kafkanettest.Client, size, sent int) {
	tr.wg.Add(1)
	go func() {
		defer tr.wg.Done()
		if _, err := c.NC.Write(append(sizePrefix(size), make([]byte, sent)...)); err != nil {
			return
		}
		for {
			select {
			case <-tr.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := c.NC.Write([]byte{0}); err != nil {
				return
			}
		}
	}()
}

// readersWaiting returns how many readers wait for memory: for the budget
// or for their host's share.
func (s *testServer) readersWaiting() int { return s.mem.waiting() + s.shares.readersWaiting() }

// TestHalfSentRequestsDoNotStarveOthers: connections that each claim nearly
// a connection's share of the budget, send most of it and then trickle,
// never silent, cannot take the memory budget from everyone else: past
// their host's share they wait, holding nothing, and another client's
// small request is answered at once, while they go on trickling (the read
// timeout, a minute, is far away).
func TestHalfSentRequestsDoNotStarveOthers(t *testing.T) {
	const budget = 4 << 20 // a connection's share 1 MiB, a host's 2 MiB
	s := newTestServer(t, WithMemoryBudget(budget), WithReadTimeout(time.Minute))
	tr := newTricklers(t)
	size := budget/4 - 4<<10
	for range 6 {
		tr.halfSend(dialRaw(t, s), size, size-16<<10)
	}
	require.Eventually(t, func() bool { return s.readersWaiting() >= 2 }, 10*time.Second, time.Millisecond,
		"the server has stopped reading some of them")

	start := time.Now()
	dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest()) // fails after 10s unanswered
	assert.Less(t, time.Since(start), 5*time.Second, "answered while they trickle")
	assert.Positive(t, refused(s, refuseHostShareWait), "the ones past their host's share are counted")
	assert.Zero(t, refused(s, refuseSlowRequest), "none has reached the read timeout")
}

// TestRequestOverShareRefused: a request whose size is past what its
// connection, or its client's host, may hold of the budget while it is
// read is refused as soon as its size is read: the connection is closed,
// counted and logged, and nothing is held.
func TestRequestOverShareRefused(t *testing.T) {
	const budget = 4 << 20
	tests := []struct {
		name  string
		opts  []Option
		size  int
		share string // the log's field naming the share passed
	}{
		{"a connection's share: a quarter of the budget", nil, budget/4 + 1, "queued.max.request.bytes.per.connection"},
		{"a connection's share, set", []Option{WithMemoryShares(64<<10, -1)}, 64<<10 + 1, "queued.max.request.bytes.per.connection"},
		{"a host's share, set", []Option{WithMemoryShares(-1, 512<<10)}, 512<<10 + 1, "queued.max.request.bytes.per.ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			opts := append([]Option{WithMemoryBudget(budget), WithLogger(zap.New(core))}, tt.opts...)
			s := newTestServer(t, opts...)
			c := dialRaw(t, s)
			c.WriteRaw(append(sizePrefix(tt.size), make([]byte, 100)...))
			assert.True(t, c.ClosedByPeer(), "closed")
			assert.Equal(t, 1.0, refused(s, refuseRequestOverShare), "counted")
			entries := logs.FilterField(zap.String("reason", refuseRequestOverShare)).All()
			require.Len(t, entries, 1, "logged")
			assert.Contains(t, entries[0].ContextMap(), tt.share)
			require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "nothing held")

			// Within the shares, the same server serves.
			dialRaw(t, s).RoundTrip(kmsg.NewPtrApiVersionsRequest())
		})
	}
}

// TestMemoryShares: the shares WithMemoryShares gives, derived from the
// budget by default.
func TestMemoryShares(t *testing.T) {
	tests := []struct {
		name             string
		budget           int64
		perConn, perIP   int64
		wantConn, wantIP int64
	}{
		{"derived", 512 << 20, 0, 0, 128 << 20, 256 << 20},
		{"derived from no budget", -1, 0, 0, math.MaxInt64, math.MaxInt64},
		{"derived from a tiny budget", 2048, 0, 0, minRequestMaxBytes, minRequestMaxBytes},
		{"set", 512 << 20, 1 << 20, 8 << 20, 1 << 20, 8 << 20},
		{"unbounded", 512 << 20, -1, -1, math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaultConfig()
			WithMemoryBudget(tt.budget).apply(&cfg)
			WithMemoryShares(tt.perConn, tt.perIP).apply(&cfg)
			require.NoError(t, cfg.validate())
			perConn, perIP := cfg.shares()
			assert.Equal(t, tt.wantConn, perConn, "per connection")
			assert.Equal(t, tt.wantIP, perIP, "per host")
		})
	}
	cfg := defaultConfig()
	WithMemoryShares(100, 0).apply(&cfg)
	assert.Error(t, cfg.validate(), "a share under 1 KiB")
}
