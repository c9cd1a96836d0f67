package kafkanet

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/timer"
)

// throttler answers ApiVersions as apiVersions does, throttling its
// connection for d after its first request's answer.
type throttler struct {
	apiVersions
	d      time.Duration
	served atomic.Int32
}

func (h *throttler) ServeKafka(r *Request) {
	if h.served.Add(1) == 1 {
		h.apiVersions.ServeKafka(r)
		r.Throttle(h.d)
		return
	}
	h.apiVersions.ServeKafka(r)
}

// TestThrottleMutesTheReader: a throttled connection's answer is written
// at once, and its reader reads no further request until the throttle's
// time has passed on the server's clock (KIP-219's mute), which a
// delayed operation ends; a manual clock decides when.
func TestThrottleMutesTheReader(t *testing.T) {
	clk := timer.NewManualClock(0)
	h := &throttler{d: 100 * time.Millisecond}
	s := newTestServerOf(t, h, WithThrottleClock(clk))
	c := dialRaw(t, s)

	c.RoundTrip(kmsg.NewPtrApiVersionsRequest()) // answered at once, then muted
	require.Eventually(t, func() bool { return testutil.ToFloat64(s.metrics.muted) == 1 }, 5*time.Second, time.Millisecond,
		"the reader stops before its next frame")
	c.Send(kmsg.NewPtrApiVersionsRequest())
	clk.Advance(99 * time.Millisecond)
	assert.Equal(t, float64(1), testutil.ToFloat64(s.metrics.muted), "still muted before the throttle time")
	assert.Equal(t, int32(1), h.served.Load(), "the second request is not read while muted")

	clk.Advance(time.Millisecond) // the delayed operation expires inside Advance: unmuted
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	c.Recv(resp)
	assert.Equal(t, int32(2), h.served.Load(), "read once the throttle ended")
	assert.Zero(t, testutil.ToFloat64(s.metrics.muted))
}

// TestThrottleEndsWithTheServer: a muted reader stops for the server's
// drain, however long its throttle, and the throttle's operation
// completes with its connection: nothing is left in the purgatory.
func TestThrottleEndsWithTheServer(t *testing.T) {
	clk := timer.NewManualClock(0)
	h := &throttler{d: time.Hour}
	s := newUnservedServerOf(t, h, WithThrottleClock(clk))
	served := make(chan error, 1)
	go func() { served <- s.Serve(s.ln) }()
	c := dialRaw(t, s)
	c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
	require.Eventually(t, func() bool { return testutil.ToFloat64(s.metrics.muted) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 1, s.throttles.Pending())

	s.close(t) // within its 5s: the hour's mute does not hold it
	require.NoError(t, <-served)
	assert.Zero(t, testutil.ToFloat64(s.metrics.muted))
	assert.Zero(t, s.throttles.Pending(), "its throttle ended with its connection")
	assert.Zero(t, s.Conns())
}
