package kafkanet

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet/kafkanettest"
	"github.com/gopurgatory/purgatory/timer"
)

// ipQuotas is a ConnectionQuotas of the tests: connection_creation_rate
// per IP, and a default (0: none), changed as a broker applies records.
type ipQuotas struct {
	mu  sync.Mutex
	own map[netip.Addr]float64
	def float64
}

func (q *ipQuotas) IPConnectionRate(ip netip.Addr) (float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.own[ip]
	return v, ok
}

func (q *ipQuotas) DefaultIPConnectionRate() (float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.def, q.def != 0
}

func (q *ipQuotas) set(ip netip.Addr, rate float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.own[ip] = rate
}

var (
	ip1 = netip.MustParseAddr("127.0.0.1")
	ip2 = netip.MustParseAddr("127.0.0.2")
	ip3 = netip.MustParseAddr("127.0.0.3")
)

// accepts records n connections from ip and returns how many were let
// through before the first throttle, and that throttle (0 if none).
func accepts(r *connRates, ip netip.Addr, n int) (int, time.Duration) {
	for i := range n {
		if d, _ := r.record(ip); d > 0 {
			return i, d
		}
	}
	return n, 0
}

// TestConnectionRateThrottle: the connection creation rate of an IP is
// measured as Kafka's ConnectionQuotas measures it (a Rate over
// quota.window.num windows of quota.window.size.seconds, at least all
// but one of them), against the IP's own quota, else the default IP
// entity's, else unlimited; a connection over it is throttled for
// (rate - quota) / quota × the measured span, at most one window, and is
// not counted.
func TestConnectionRateThrottle(t *testing.T) {
	tests := []struct {
		name     string
		own      map[netip.Addr]float64
		def      float64
		windows  int
		ip       netip.Addr
		accepted int
		throttle time.Duration
	}{
		{"own quota", map[netip.Addr]float64{ip1: 2}, 0, 2, ip1, 2, 500 * time.Millisecond},             // 3/1s: (3-2)/2 × 1s
		{"Kafka's windows", map[netip.Addr]float64{ip1: 5}, 0, 11, ip1, 50, 200 * time.Millisecond},     // 51/10s: (5.1-5)/5 × 10s
		{"capped at a window", map[netip.Addr]float64{ip1: 1}, 0, 11, ip1, 10, time.Second},             // 11/10s: 0.1 × 10s
		{"another IP unaffected", map[netip.Addr]float64{ip1: 2}, 0, 2, ip2, 100, 0},                    // no quota of its own, no default
		{"the default applies", map[netip.Addr]float64{ip1: 2}, 1, 2, ip3, 1, time.Second},              // 2/1s: (2-1)/1 × 1s
		{"own beats the default", map[netip.Addr]float64{ip1: 3}, 1, 2, ip1, 3, 333 * time.Millisecond}, // 4/1s: (4-3)/3 × 1s
		{"unlimited when unset", nil, 0, 2, ip1, 100, 0},
		{"a rate of zero is unlimited", map[netip.Addr]float64{ip1: 0}, 0, 2, ip1, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &ipQuotas{own: tt.own, def: tt.def}
			r := newConnRates(q, tt.windows, time.Second, timer.NewManualClock(0))
			n, d := accepts(r, tt.ip, 100)
			assert.Equal(t, tt.accepted, n, "connections let through")
			assert.Equal(t, tt.throttle, d, "the first throttle")
			if d > 0 {
				again, d2 := accepts(r, tt.ip, 1)
				assert.Zero(t, again, "the throttled connection was not counted: the next is throttled as it was")
				assert.Equal(t, d, d2)
			}
		})
	}
}

// TestConnectionRateFollowsTime: the rate falls as Kafka's does, once the
// samples span more than the windows' floor; a quota altered applies to
// the next connection, and a throttle is capped at one window.
func TestConnectionRateFollowsTime(t *testing.T) {
	clk := timer.NewManualClock(0)
	q := &ipQuotas{own: map[netip.Addr]float64{ip1: 2}}
	r := newConnRates(q, 2, time.Second, clk)
	n, d := accepts(r, ip1, 10)
	require.Equal(t, 2, n)
	require.Equal(t, 500*time.Millisecond, d)

	clk.Advance(500 * time.Millisecond) // 3 over 1.5s is 2: within
	n, d = accepts(r, ip1, 10)
	assert.Equal(t, 1, n, "one more once the throttle has passed")
	assert.Equal(t, 500*time.Millisecond, d, "4 over 1.5s: (2.67-2)/2 × 1.5s")

	q.set(ip1, 1) // lowered: 4 over 1.5s is 2.67, (2.67-1)/1 × 1.5s
	_, d = accepts(r, ip1, 1)
	assert.Equal(t, time.Second, d, "the new quota applies at once; the throttle capped at a window")

	q.set(ip1, 100)
	n, _ = accepts(r, ip1, 10)
	assert.Equal(t, 10, n, "raised: let through")

	clk.Advance(time.Hour)
	r.record(ip2) // no quota: not measured
	r.record(ip1) // sweeps the rates obsolete for all the windows
	assert.Equal(t, 1, r.tracked(), "only IPs with a quota that connected within the windows are kept")
}

// dialFrom connects to s from local address from (any 127.0.0.0/8 address
// is loopback on Linux).
func dialFrom(t *testing.T, s *testServer, from netip.Addr) *kafkanettest.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", s.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &kafkanettest.Client{T: t, NC: nc}
}

// held returns how many operations wait in s's Throttle purgatory: held
// connections' closes, and mutes.
func held(s *testServer) int {
	s.mu.Lock()
	p := s.throttles
	s.mu.Unlock()
	if p == nil {
		return 0
	}
	return p.Pending()
}

// TestConnectionRateQuotaClosesExcess: a connection from an IP over its
// connection_creation_rate is accepted, not served, counted, and closed
// once its throttle has passed on the server's clock (Kafka's
// ConnectionThrottledException and the acceptor's throttledSockets);
// another IP's connections go on being served meanwhile, and the IP is
// served again once its rate has fallen.
func TestConnectionRateQuotaClosesExcess(t *testing.T) {
	clk := timer.NewManualClock(0)
	q := &ipQuotas{own: map[netip.Addr]float64{ip1: 2}}
	s := newTestServer(t, WithThrottleClock(clk), WithConnectionQuotas(q, 2, time.Second))

	dialFrom(t, s, ip1).RoundTrip(kmsg.NewPtrApiVersionsRequest())
	dialFrom(t, s, ip1).RoundTrip(kmsg.NewPtrApiVersionsRequest())
	excess := dialFrom(t, s, ip1)
	excess.Send(kmsg.NewPtrApiVersionsRequest()) // never read
	require.Eventually(t, func() bool { return refused(s, refuseConnectionRate) == 1 }, 5*time.Second, time.Millisecond,
		"the third connection within the second is counted")
	assert.Equal(t, 1, held(s), "held until its throttle ends")

	dialFrom(t, s, ip2).RoundTrip(kmsg.NewPtrApiVersionsRequest()) // unaffected
	assert.Equal(t, 3, s.Conns(), "the held connection is not one of the server's")

	clk.Advance(499 * time.Millisecond)
	assert.Equal(t, 1, held(s), "still held before its 500ms")
	clk.Advance(time.Millisecond)
	assert.True(t, excess.ClosedByPeer(), "closed at its throttle's end, its request unanswered")
	assert.Zero(t, held(s))

	dialFrom(t, s, ip1).RoundTrip(kmsg.NewPtrApiVersionsRequest()) // 3 over 1.5s: within
	assert.Equal(t, 1.0, refused(s, refuseConnectionRate))
}

// TestConnectionRateHeldUntilDrain: a connection held for its throttle is
// closed by the server's drain, however long the throttle.
func TestConnectionRateHeldUntilDrain(t *testing.T) {
	clk := timer.NewManualClock(0) // never advanced
	q := &ipQuotas{def: 1}
	s := newUnservedServer(t, WithThrottleClock(clk), WithConnectionQuotas(q, 2, time.Second))
	served := make(chan error, 1)
	go func() { served <- s.Serve(s.ln) }()
	dialFrom(t, s, ip1).RoundTrip(kmsg.NewPtrApiVersionsRequest())
	hold := dialFrom(t, s, ip1)
	require.Eventually(t, func() bool { return refused(s, refuseConnectionRate) == 1 }, 5*time.Second, time.Millisecond)

	s.close(t)
	require.NoError(t, <-served)
	assert.True(t, hold.ClosedByPeer(), "closed with the server")
	assert.Zero(t, held(s))
}

// TestConnectionQuotasValidated: the windows must be at least one, of a
// positive span.
func TestConnectionQuotasValidated(t *testing.T) {
	for _, o := range []Option{WithConnectionQuotas(&ipQuotas{}, 0, time.Second), WithConnectionQuotas(&ipQuotas{}, 1, 0)} {
		_, err := New(apiVersions{}, o)
		assert.Error(t, err)
	}
}
