package quota

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/timer"
)

func newTestManager(t *testing.T, opts ...Option) (*Manager, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(time.Hour)
	m, err := New(Produce, append([]Option{WithClock(clk)}, opts...)...)
	require.NoError(t, err)
	return m, clk
}

// imageWith returns an image whose only quota is producer_byte_rate
// limit on e.
func imageWith(e metadata.QuotaEntity, limit float64) *metadata.Image {
	return metadata.Empty().Apply(1, &metadata.Record{Quotas: []metadata.QuotaChange{
		{Entity: e, Key: metadata.QuotaProducerByteRate, Value: limit}}})
}

func quotaOf(t *testing.T, m *Manager, im *metadata.Image, user, client string) metadata.ClientQuota {
	t.Helper()
	q, ok := m.Quota(im, user, client)
	require.True(t, ok)
	return q
}

// TestThrottleTime: Kafka's computation, on a manual clock. A first burst
// is measured over ten windows; over the quota, the throttle is the time
// the rate needs to fall back to it; old samples count nothing; a huge
// burst is capped at all the windows.
func TestThrottleTime(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, clk := newTestManager(t, WithRegisterer(reg, "broker"))
	im := imageWith(metadata.QuotaEntity{ClientID: metadata.QuotaDefault}, 100)
	q := quotaOf(t, m, im, "alice", "app")

	assert.Zero(t, m.Record(q, 900), "900 bytes over ten windows: 90/s")
	assert.InDelta(t, 90, m.Rate(q), 1e-9)
	assert.Equal(t, time.Second, m.Record(q, 200), "110/s over 10s: 1s to fall back to 100/s")
	clk.Advance(time.Second)
	assert.InDelta(t, 110, m.Rate(q), 1e-9, "still counted over ten windows: Kafka's rate spans at least n-1")
	clk.Advance(9500 * time.Millisecond)
	assert.InDelta(t, 1100/10.5, m.Rate(q), 1e-9, "past ten windows the span grows: 1100 over 10.5s")
	assert.Equal(t, 510*time.Millisecond, m.Record(q, 1), "1101 over 10.5s: 510ms to fall back to 100/s")

	clk.Advance(11 * time.Second)
	assert.Zero(t, m.Rate(q), "every sample older than the 11 windows")
	assert.Equal(t, 11*time.Second, m.Record(q, 1e9), "capped at all the windows")
	h := testutil.CollectAndCount(reg, "broker_quota_throttle_time_seconds")
	assert.Equal(t, 1, h, "one histogram, labelled produce")
}

// TestSteadyRate: a client that sends as fast as its throttles allow
// (each request once the last throttle has passed, as KIP-219's clients
// and a muted connection make it) gets its quota. With two windows of a
// second the rate it keeps is within 5% over 30s; with Kafka's eleven it
// comes in bursts of ten windows' worth every eleven seconds or so (what
// Kafka's Rate allows once the burst before has left it), and only whole
// cycles average to the quota. On a manual clock: deterministic.
func TestSteadyRate(t *testing.T) {
	const limit, batch = 256 << 10, 64 << 10
	run := func(samples int, total time.Duration) []float64 { // bytes per second sent
		m, clk := newTestManager(t, WithWindows(samples, time.Second))
		q := quotaOf(t, m, imageWith(metadata.QuotaEntity{User: metadata.QuotaNamed("alice")}, limit), "alice", "app")
		start := clk.Now()
		perSecond := make([]float64, total/time.Second)
		for clk.Now()-start < total {
			perSecond[(clk.Now()-start)/time.Second] += batch
			clk.Advance(max(m.Record(q, batch), time.Millisecond)) // a round trip at least
		}
		return perSecond
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	two := run(2, 40*time.Second)
	assert.InEpsilon(t, limit, mean(two[5:35]), 0.05, "two windows, 30s")
	assert.InEpsilon(t, limit, mean(two[1:5]), 0.25, "two windows, a few seconds after the first")
	eleven := run(11, 120*time.Second)
	assert.Greater(t, mean(eleven[:1]), 5.0*limit, "eleven windows: a first burst of about ten seconds' worth")
	assert.InEpsilon(t, limit, mean(eleven[11:110]), 0.1, "eleven windows, nine cycles")
}

// TestScopes: a user's quota bounds all of its client ids together; a
// default one each client on its own; Unrecord takes a value back.
func TestScopes(t *testing.T) {
	m, _ := newTestManager(t)
	shared := imageWith(metadata.QuotaEntity{User: metadata.QuotaNamed("alice")}, 100)
	a, b := quotaOf(t, m, shared, "alice", "a"), quotaOf(t, m, shared, "alice", "b")
	m.Record(a, 600)
	assert.NotZero(t, m.Record(b, 600), "alice's clients share her quota")

	perClient := imageWith(metadata.QuotaEntity{User: metadata.QuotaDefault, ClientID: metadata.QuotaDefault}, 100)
	c, d := quotaOf(t, m, perClient, "carol", "c"), quotaOf(t, m, perClient, "carol", "d")
	m.Record(c, 600)
	assert.Zero(t, m.Record(d, 600), "a default quota bounds each client alone")

	assert.NotZero(t, m.Record(c, 600))
	m.Unrecord(c, 600)
	assert.InDelta(t, 60, m.Rate(c), 1e-9, "taken back")
}

// TestIdleRatesDropped: a client idle for all the windows leaves no rate
// behind.
func TestIdleRatesDropped(t *testing.T) {
	m, clk := newTestManager(t)
	im := imageWith(metadata.QuotaEntity{ClientID: metadata.QuotaDefault}, 100)
	for _, c := range []string{"a", "b", "c"} {
		m.Record(quotaOf(t, m, im, "", c), 1)
	}
	require.Equal(t, 3, m.Clients())
	clk.Advance(11 * time.Second)
	m.Record(quotaOf(t, m, im, "", "d"), 1)
	assert.Equal(t, 1, m.Clients(), "the idle ones swept")
}

func TestNewValidates(t *testing.T) {
	_, err := New("bytes")
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Fetch, WithWindows(0, time.Second))
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Fetch, WithWindows(11, 0))
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
