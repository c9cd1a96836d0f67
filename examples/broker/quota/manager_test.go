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

// TestThrottleTime: a token bucket on a manual clock. A new client holds
// all the windows' worth; past it, the throttle is the time the refill
// takes to pay the debt; credit refills at the quota up to the brim; a
// huge burst is capped at all the windows.
func TestThrottleTime(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, clk := newTestManager(t, WithRegisterer(reg, "broker"))
	im := imageWith(metadata.QuotaEntity{ClientID: metadata.QuotaDefault}, 100)
	q := quotaOf(t, m, im, "alice", "app")

	assert.InDelta(t, 1100, m.Credit(q), 1e-9, "a new client: eleven windows of 100/s")
	assert.Zero(t, m.Record(q, 1000), "within the bucket")
	assert.Equal(t, time.Second, m.Record(q, 200), "100 bytes in debt at 100/s: 1s")
	clk.Advance(500 * time.Millisecond)
	assert.InDelta(t, -50, m.Credit(q), 1e-9, "half paid")
	assert.Equal(t, 510*time.Millisecond, m.Record(q, 1), "51 in debt: 510ms")
	clk.Advance(time.Hour)
	assert.InDelta(t, 1100, m.Credit(q), 1e-9, "refilled to the brim, no further")

	assert.Equal(t, 11*time.Second, m.Record(q, 1e9), "capped at all the windows")
	assert.Equal(t, 11*time.Second, m.Record(q, 0), "the debt stays to be paid")
	h := testutil.CollectAndCount(reg, "broker_quota_throttle_time_seconds")
	assert.Equal(t, 1, h, "one histogram, labelled produce")
}

// TestQuotaChange: a quota altered while a client runs applies from then
// on, and a lower one cuts the credit to its own brim.
func TestQuotaChange(t *testing.T) {
	m, clk := newTestManager(t, WithWindows(2, time.Second))
	e := metadata.QuotaEntity{ClientID: metadata.QuotaNamed("app")}
	high, low := quotaOf(t, m, imageWith(e, 1000), "", "app"), quotaOf(t, m, imageWith(e, 10), "", "app")
	assert.Zero(t, m.Record(high, 2000), "the whole bucket at 1000/s")
	clk.Advance(time.Second)
	assert.InDelta(t, 10, m.Credit(low), 1e-9, "a second refilled at the new quota")
	assert.Zero(t, m.Record(low, 10))
	clk.Advance(time.Hour)
	assert.InDelta(t, 20, m.Credit(low), 1e-9, "two windows of the new quota")
}

// TestSteadyRate: a client that sends as fast as its throttles allow
// (each request once the last throttle has passed, as KIP-219's clients
// and a muted connection make it) gets its quota: after its first burst
// (the full bucket, all the windows' worth), within 5% over any 30s, with
// Kafka's eleven windows as with two. Kafka's Rate, which this replaced,
// let such a client through in bursts of ten windows' worth every eleven
// seconds, each old burst leaving the samples at once: 0.7 to 1.1 of the
// quota over 30s depending on where they fell. On a manual clock:
// deterministic.
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
	for _, samples := range []int{2, 11} {
		perSecond := run(samples, 120*time.Second)
		assert.Greater(t, perSecond[0], float64(samples-1)*limit, "%d windows: a first burst of the full bucket", samples)
		for from := 2; from+30 <= len(perSecond); from += 7 {
			assert.InEpsilon(t, limit, mean(perSecond[from:from+30]), 0.05, "%d windows, 30s from %ds", samples, from)
		}
	}
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
	assert.InDelta(t, 1100-600, m.Credit(c), 1e-9, "given back")
}

// TestIdleBucketsDropped: a client whose bucket has refilled to the brim
// leaves nothing behind; one still in debt keeps its bucket, so waiting
// out a sweep forgives nothing.
func TestIdleBucketsDropped(t *testing.T) {
	m, clk := newTestManager(t)
	im := imageWith(metadata.QuotaEntity{ClientID: metadata.QuotaDefault}, 100)
	for _, c := range []string{"a", "b", "c"} {
		m.Record(quotaOf(t, m, im, "", c), 1)
	}
	debtor := quotaOf(t, m, im, "", "debtor")
	m.Record(debtor, 1100+100*12)
	require.Equal(t, 4, m.Clients())
	clk.Advance(11 * time.Second)
	m.Record(quotaOf(t, m, im, "", "d"), 1)
	assert.Equal(t, 2, m.Clients(), "the refilled ones swept, the debtor kept")
	assert.InDelta(t, -100, m.Credit(debtor), 1e-9, "still a second in debt")
}

func TestNewValidates(t *testing.T) {
	_, err := New("bytes")
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Fetch, WithWindows(0, time.Second))
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Fetch, WithWindows(11, 0))
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
