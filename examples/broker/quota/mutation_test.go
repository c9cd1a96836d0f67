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

// newMutationManager returns a controller mutation Manager of two
// windows of a second on a manual clock, and the quota of 2 mutations a
// second on client id app: its bucket holds 4.
func newMutationManager(t *testing.T, opts ...Option) (*Manager, metadata.ClientQuota, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(time.Hour)
	m, err := New(Mutation, append([]Option{WithClock(clk), WithWindows(2, time.Second)}, opts...)...)
	require.NoError(t, err)
	im := metadata.Empty().Apply(1, &metadata.Record{Quotas: []metadata.QuotaChange{
		{Entity: metadata.QuotaEntity{ClientID: metadata.QuotaNamed("app")}, Key: metadata.QuotaControllerMutationRate, Value: 2}}})
	q, ok := m.Quota(im, "", "app")
	require.True(t, ok, "controller_mutation_rate applies to app")
	return m, q, clk
}

// TestMutationsStrict: Kafka's StrictControllerMutationQuota on a manual
// clock. A mutation is taken whole while the client owes nothing, even
// one that takes it past its credit; once it owes, each further one is
// refused uncharged, and the throttle is the time the refill takes to pay
// the debt as of the last refusal, less the time since. A request that
// was refused nothing is not throttled, however far it went.
func TestMutationsStrict(t *testing.T) {
	m, q, clk := newMutationManager(t)

	first := m.Mutations(q, true)
	assert.True(t, first.Record(3), "4 in the bucket")
	assert.True(t, first.Record(3), "1 left: not in debt yet, so all 3 taken")
	assert.InDelta(t, -2, m.Credit(q), 1e-9)
	assert.Zero(t, first.Throttle(), "nothing refused: no throttle, as Kafka's strict quota")

	second := m.Mutations(q, true)
	assert.False(t, second.Record(1), "in debt: refused")
	assert.InDelta(t, -2, m.Credit(q), 1e-9, "a refusal charges nothing")
	assert.Equal(t, time.Second, second.Throttle(), "2 owed at 2/s")
	clk.Advance(400 * time.Millisecond)
	assert.Equal(t, 600*time.Millisecond, second.Throttle(), "less the time since")
	assert.False(t, second.Record(1), "still 1.2 owed")
	assert.Equal(t, 600*time.Millisecond, second.Throttle(), "the last refusal's")
	clk.Advance(700 * time.Millisecond)
	assert.True(t, second.Record(1), "paid, 0.2 in credit: taken")
	assert.Zero(t, second.Throttle(), "the last refusal's throttle has passed")
	assert.False(t, second.Record(0), "owing again (0.8): even nothing is refused, as Kafka checks before it records")
	assert.Equal(t, 400*time.Millisecond, second.Throttle())
}

// TestMutationsPermissive: Kafka's PermissiveControllerMutationQuota.
// Every mutation is taken, and the throttle is the last debt's.
func TestMutationsPermissive(t *testing.T) {
	m, q, clk := newMutationManager(t)
	p := m.Mutations(q, false)
	assert.True(t, p.Record(5))
	assert.Equal(t, 500*time.Millisecond, p.Throttle(), "1 owed at 2/s")
	assert.True(t, p.Record(3), "taken though in debt")
	assert.Equal(t, 2*time.Second, p.Throttle(), "4 owed")

	clk.Advance(time.Hour)
	big := m.Mutations(q, false)
	assert.True(t, big.Record(100))
	assert.Equal(t, 48*time.Second, big.Throttle(),
		"96 owed: not capped at the windows' span, as Kafka's controller mutation throttle is not")
	assert.False(t, m.Mutations(q, true).Record(1), "a strict request after it is refused: they share the bucket")
	big.Unrecord(100)
	assert.InDelta(t, 4, m.Credit(q), 1e-9, "given back, to the brim")
	assert.True(t, m.Mutations(q, true).Record(1))
}

// TestMutationsUnbounded: a nil *Mutations, a client no quota applies to,
// takes everything and is never throttled (Kafka's
// UnboundedControllerMutationQuota).
func TestMutationsUnbounded(t *testing.T) {
	var u *Mutations
	assert.True(t, u.Record(1e9))
	u.Unrecord(1e9)
	assert.Zero(t, u.Throttle())
	assert.Zero(t, u.Answer())
}

// TestMutationsAnswer: Answer gives the throttle and observes it in the
// throttle metric, labelled controller_mutation, once per request
// throttled.
func TestMutationsAnswer(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, q, _ := newMutationManager(t, WithRegisterer(reg, "broker"))
	assert.Zero(t, m.Mutations(q, true).Answer(), "within the quota")
	p := m.Mutations(q, false)
	p.Record(6)
	p.Record(2)
	assert.Equal(t, 2*time.Second, p.Answer())
	assert.Equal(t, 1, testutil.CollectAndCount(reg, "broker_quota_throttle_time_seconds"))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	h := mfs[0].GetMetric()[0]
	assert.Equal(t, "controller_mutation", h.GetLabel()[0].GetValue())
	assert.Equal(t, uint64(1), h.GetHistogram().GetSampleCount(), "one throttled answer, two violations")
}
