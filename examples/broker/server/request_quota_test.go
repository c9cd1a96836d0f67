package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/timer"
)

// steppingClock is a request quota's clock in tests: each reading is step
// after the last, so that a request answered at once took one step.
type steppingClock struct {
	mu   sync.Mutex
	at   time.Time
	step time.Duration
}

func (c *steppingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(c.step)
	return c.at
}

// TestRequestQuotaThrottles: request_percentage bounds the time a
// client's requests take. A request that takes its client over is
// answered with its throttle time and mutes the connection; a client
// without a quota is not throttled; a long poll is charged for its
// handler's time, not for its wait.
func TestRequestQuotaThrottles(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QuotaWindowNum = 2 })
	topic := createTopic(t, s, "rq", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var alts []metadata.QuotaAlteration
	for _, id := range []string{"busy", "poller"} {
		name := id
		alts = append(alts, metadata.QuotaAlteration{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID, Name: &name}},
			Ops: []metadata.QuotaOp{{Key: metadata.QuotaRequestPercentage, Value: 10}}})
	}
	_, _, err := s.ctrl().AlterQuotas(ctx, alts, false)
	require.NoError(t, err)

	// Buckets refill on a clock that stands still; every request takes
	// 300ms: 30 percent-seconds against a bucket of 10% over two windows
	// of 1s, 20. The first request's debt of 10 takes 1s to refill.
	clk := timer.NewManualClock(0)
	m, err := quota.New(quota.Request, quota.WithWindows(2, time.Second), quota.WithClock(clk))
	require.NoError(t, err)
	stepper := &steppingClock{at: time.Unix(0, 0), step: 300 * time.Millisecond}
	s.quotas.request, s.quotas.now = m, stepper.now

	tc := newTestConn(t, s)
	metadataOf := func(clientID string) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		r := tc.request(req)
		r.ClientID = clientID
		handler{s}.ServeKafka(r)
		return tc.await(r).(*kmsg.MetadataResponse)
	}
	assert.Zero(t, metadataOf("free").ThrottleMillis, "no quota applies")
	assert.Equal(t, int32(1000), metadataOf("busy").ThrottleMillis, "300ms against 10% of two 1s windows")

	// A long poll: its handler returns while it waits (one step), then
	// the clock runs on for a minute before an append answers it. Charged
	// for the wait, its throttle would be capped at the two windows.
	fetch := fetchRequest(12, 5*time.Second, 1, fetchFrom{topic: topic})
	poll := newTestConn(t, s)
	r := poll.request(fetch)
	r.ClientID = "poller"
	handler{s}.ServeKafka(r)
	_, answered := poll.answer(r)
	require.False(t, answered, "waits for records")
	for range 200 {
		stepper.now()
	}
	produce := dialRaw(t, s)
	pr := produce.RoundTrip(produceRequest(9, 1, "rq", 0, batchtest.Values(time.Now().UnixMilli(), "x"))).(*kmsg.ProduceResponse)
	require.Zero(t, pr.Topics[0].Partitions[0].ErrorCode)
	fr := poll.await(r).(*kmsg.FetchResponse)
	require.Len(t, fr.Topics, 1)
	assert.NotEmpty(t, fr.Topics[0].Partitions[0].RecordBatches, "woken by the append")
	assert.Equal(t, int32(1000), fr.ThrottleMillis, "charged the handler's 300ms, not the minute it waited")
}

// TestRequestQuotaMutes: a client over its request quota on a real
// connection is answered with its throttle time and its connection is
// muted. The quota, a millionth of a percent, is spent by any request (20ns
// over the two windows), and the throttle capped at the two windows.
func TestRequestQuotaMutes(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QuotaWindowNum = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	test := "test" // the raw connections' client id
	_, _, err := s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID, Name: &test}},
		Ops: []metadata.QuotaOp{{Key: metadata.QuotaRequestPercentage, Value: 1e-6}}}}, false)
	require.NoError(t, err)
	c := dialRaw(t, s)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	mr := c.RoundTrip(req).(*kmsg.MetadataResponse)
	assert.Equal(t, int32(2000), mr.ThrottleMillis, "capped at quota.window.num windows")
	require.Eventually(t, func() bool { return gathered(t, s, "broker_connections_muted", "") == 1 },
		5*time.Second, time.Millisecond, "the connection is muted")
	assert.Equal(t, 1.0, gathered(t, s, "broker_quota_throttle_time_seconds", "request"))
}

// TestRequestQuotaExempt: a follower's fetch, the requests between brokers
// and authentication are exempt; a consumer's fetch is not.
func TestRequestQuotaExempt(t *testing.T) {
	follower := kmsg.NewPtrFetchRequest()
	follower.SetVersion(12)
	follower.ReplicaID = 2
	consumer := kmsg.NewPtrFetchRequest()
	consumer.SetVersion(12)
	consumer.ReplicaID = -1
	for _, tt := range []struct {
		msg    kmsg.Request
		exempt bool
	}{
		{follower, true},
		{consumer, false},
		{kmsg.NewPtrWriteTxnMarkersRequest(), true},
		{kmsg.NewPtrSASLAuthenticateRequest(), true},
		{kmsg.NewPtrMetadataRequest(), false},
		{kmsg.NewPtrProduceRequest(), false},
	} {
		assert.Equal(t, tt.exempt, exemptFromRequestQuota(tt.msg), kmsg.NameForKey(tt.msg.Key()))
	}
}
