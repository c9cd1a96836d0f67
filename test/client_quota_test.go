package test

import (
	"context"
	"crypto/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity { // type, name ("" the default), ...
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "" {
			c.Name = kmsg.StringPtr(parts[i+1])
		}
		e = append(e, c)
	}
	return e
}

// TestClientQuotaAdmin: kadm sets, describes and removes client quotas on
// one broker, and gets Kafka's INVALID_REQUEST for a bad entity or key.
func TestClientQuotaAdmin(t *testing.T) {
	srv := startBroker(t)
	adm := kadm.NewClient(newClient(t, srv))
	ctx := testCtx(t)

	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "alice", "client-id", "app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}},
		{Entity: quotaEntity("user", ""), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2 << 20}, {Key: "request_percentage", Value: 50}}},
		{Entity: quotaEntity("user", "mallory"), Ops: []kadm.AlterClientQuotaOp{{Key: "bytes_per_fortnight", Value: 1}}},
		{Entity: quotaEntity("group", "g"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
	})
	require.NoError(t, err)
	require.Len(t, altered, 4)
	assert.NoError(t, altered[0].Err)
	assert.NoError(t, altered[1].Err)
	assert.ErrorIs(t, altered[2].Err, kerr.InvalidRequest, "an unknown key")
	assert.Contains(t, altered[2].ErrMessage, "bytes_per_fortnight")
	assert.ErrorIs(t, altered[3].Err, kerr.InvalidRequest, "an unknown entity type")

	all, err := adm.DescribeClientQuotas(ctx, false, nil)
	require.NoError(t, err)
	require.Len(t, all, 2)
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 1}})
	require.NoError(t, err)
	require.Len(t, described, 1, "the default user's, strictly")
	assert.Nil(t, described[0].Entity[0].Name)
	assert.ElementsMatch(t, kadm.ClientQuotaValues{{Key: "consumer_byte_rate", Value: 2 << 20}, {Key: "request_percentage", Value: 50}}, described[0].Values)

	_, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("user", ""),
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}, {Key: "request_percentage", Remove: true}}}})
	require.NoError(t, err)
	described, err = adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}})
	require.NoError(t, err)
	require.Len(t, described, 1, "the default user's are gone, alice's client's stays")
	assert.Equal(t, "app", *described[0].Entity[1].Name)

	_, err = adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 0}})
	assert.ErrorIs(t, err, kerr.InvalidRequest, "EXACT without a name")
}

// TestClientQuotaCluster: on three brokers, AlterClientQuotas sent to a
// broker that is not the controller is forwarded to it, committed once,
// and every broker describes the quotas once it has applied the record.
func TestClientQuotaCluster(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctx := testCtx(t)
	ctrl := c.activeController(cl)
	other := ctrl%3 + 1

	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("app")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 4096}}
	req.Entries = append(req.Entries, e)
	var resp *kmsg.AlterClientQuotasResponse
	require.Eventually(t, func() bool { // NOT_CONTROLLER while the quorum settles
		var err error
		resp, err = req.RequestWith(ctx, cl.Broker(int(other)))
		return err == nil && resp.Entries[0].ErrorCode != kerr.NotController.Code
	}, 10*time.Second, 50*time.Millisecond)
	require.Zero(t, resp.Entries[0].ErrorCode, "forwarded to broker %d and committed", ctrl)

	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	for id := int32(1); id <= 3; id++ {
		require.Eventually(t, func() bool {
			d, err := describe.RequestWith(ctx, cl.Broker(int(id)))
			return err == nil && len(d.Entries) == 1 && len(d.Entries[0].Values) == 1 && d.Entries[0].Values[0].Value == 4096
		}, 10*time.Second, 20*time.Millisecond, "broker %d describes the quota", id)
	}
}

// TestClientQuotaEnforcement: a producer whose client id is limited to
// 256 KiB/s by a quota produces at close to that rate (within 25%,
// measured after its first window), throttled and muted; a producer of
// another client id beside it is never throttled and produces far faster.
// Two quota windows of a second (quota.window.num 2): Kafka's eleven
// would let the first ten seconds' worth through at once.
func TestClientQuotaEnforcement(t *testing.T) {
	const limit = 256 << 10
	srv := startBroker(t, func(cfg *server.Config) { cfg.QuotaWindowNum = 2 })
	admin := newClient(t, srv)
	createTopic(t, admin, "quota", 1)
	_, err := kadm.NewClient(admin).AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "limited"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: limit}}}})
	require.NoError(t, err)

	limited, limitedThrottles := quotaProducer(t, srv, "limited")
	free, freeThrottles := quotaProducer(t, srv, "free")
	const run = 5 * time.Second
	var wg sync.WaitGroup
	var limitedAcks, freeAcks []ack
	wg.Add(2)
	go func() { defer wg.Done(); limitedAcks = produceFor(t, limited, run) }()
	go func() { defer wg.Done(); freeAcks = produceFor(t, free, run) }()
	wg.Wait()

	got := ackedRate(limitedAcks, time.Second, run)
	t.Logf("limited: %.0f B/s for a quota of %d B/s, %d throttles; free: %.0f B/s", got, limit, limitedThrottles.Load(), ackedRate(freeAcks, time.Second, run))
	assert.InEpsilon(t, float64(limit), got, 0.25, "the limited producer's rate")
	assert.Positive(t, limitedThrottles.Load(), "it was told to back off")
	assert.Zero(t, freeThrottles.Load(), "the other client id is not throttled")
	assert.Greater(t, ackedRate(freeAcks, time.Second, run), 2.0*limit, "and is not held to the quota")
}

// TestControllerMutationQuota: kadm's CreateTopics under a
// controller_mutation_rate of one partition a second (a bucket of two,
// quota.window.num 2). Of three topics of two partitions, the first two
// are created (the second while the client owes nothing yet) and the
// third is THROTTLING_QUOTA_EXCEEDED, with throttle_time_ms the two
// seconds the debt takes to pay; once they have passed (kgo waits them
// out, the broker mutes the connection for them) the third is created. A
// client id without the quota creates as many partitions as it likes.
func TestControllerMutationQuota(t *testing.T) {
	srv := startBroker(t, func(cfg *server.Config) { cfg.QuotaWindowNum = 2 })
	ctx := testCtx(t)
	_, err := kadm.NewClient(newClient(t, srv)).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "mutator"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}}}})
	require.NoError(t, err)

	var throttles throttleLog
	adm := kadm.NewClient(newClient(t, srv, kgo.ClientID("mutator"), kgo.WithHooks(&throttles)))
	created, err := adm.CreateTopics(ctx, 2, 1, nil, "m1", "m2", "m3")
	require.NoError(t, err)
	assert.NoError(t, created["m1"].Err)
	assert.NoError(t, created["m2"].Err, "taken whole while the client owed nothing")
	assert.ErrorIs(t, created["m3"].Err, kerr.ThrottlingQuotaExceeded)
	assert.Equal(t, "The throttling quota has been exceeded.", created["m3"].ErrMessage)
	got := throttles.all()
	require.Len(t, got, 1, "the answer carried a throttle time")
	assert.InDelta(t, 2*time.Second, got[0], float64(500*time.Millisecond), "two partitions owed at one a second")

	require.Eventually(t, func() bool {
		created, err = adm.CreateTopics(ctx, 2, 1, nil, "m3")
		return err == nil && created["m3"].Err == nil
	}, 15*time.Second, 100*time.Millisecond, "created once the debt is paid")

	free := kadm.NewClient(newClient(t, srv, kgo.ClientID("free")))
	created, err = free.CreateTopics(ctx, 50, 1, nil, "f1", "f2", "f3")
	require.NoError(t, err)
	assert.NoError(t, created.Error(), "no quota applies to another client id")
}

// TestControllerMutationQuotaForwarded: on three brokers, a
// CreatePartitions sent to a broker that is not the controller is
// charged there, where the client is known: its topic past the quota is
// refused THROTTLING_QUOTA_EXCEEDED with a throttle time, and the rest is
// forwarded. The controller does not charge the forwarded request again,
// which, under a quota on every client id, would spend the forwarding
// broker's own bucket: a second client's growth forwarded the same way
// goes through.
func TestControllerMutationQuotaForwarded(t *testing.T) {
	c := startCluster(t, 3, clusterTimings, func(cfg *server.Config) { cfg.QuotaWindowNum = 2 })
	admin := c.client()
	ctrl := c.activeController(admin)
	other := ctrl%3 + 1
	for _, name := range []string{"g1", "g2", "g3"} {
		c.createTopic(admin, name, 1, 1, nil)
	}
	ctx := testCtx(t)
	_, err := kadm.NewClient(admin).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", ""),
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}}}}) // a bucket of 2 for each client id
	require.NoError(t, err)
	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	require.Eventually(t, func() bool {
		d, err := describe.RequestWith(ctx, admin.Broker(int(other)))
		return err == nil && len(d.Entries) == 1
	}, 10*time.Second, 20*time.Millisecond, "broker %d has the quota", other)

	grow := func(clientID string, counts ...any) *kmsg.CreatePartitionsResponse {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 5000
		for i := 0; i < len(counts); i += 2 {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = counts[i].(string), int32(counts[i+1].(int))
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, c.client(kgo.ClientID(clientID)).Broker(int(other)))
		require.NoError(t, err)
		return resp
	}
	codes := func(resp *kmsg.CreatePartitionsResponse) map[string]int16 {
		out := make(map[string]int16)
		for _, st := range resp.Topics {
			out[st.Topic] = st.ErrorCode
		}
		return out
	}

	resp := grow("grower", "g1", 3, "g2", 3, "g3", 2)
	assert.Equal(t, map[string]int16{"g1": 0, "g2": 0, "g3": kerr.ThrottlingQuotaExceeded.Code}, codes(resp),
		"g2 taken while the client owed nothing, g3 refused by broker %d", other)
	assert.InDelta(t, 2000, resp.ThrottleMillis, 500, "two partitions owed at one a second")

	resp = grow("grower-2", "g3", 3)
	assert.Equal(t, map[string]int16{"g3": 0}, codes(resp), "not charged again to the forwarding broker at the controller")
	for _, id := range []int32{ctrl, other} {
		require.Eventually(t, func() bool {
			md := metadataOf(t, admin.Broker(int(id)), "g3")
			return len(md.Topics) == 1 && len(md.Topics[0].Partitions) == 3
		}, 10*time.Second, 20*time.Millisecond, "broker %d sees g3 grown", id)
	}
}

// throttleLog keeps the throttle times a client is told.
type throttleLog struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *throttleLog) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	if interval > 0 {
		l.mu.Lock()
		l.d = append(l.d, interval)
		l.mu.Unlock()
	}
}

func (l *throttleLog) all() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.d...)
}

// ack is a record acknowledged: its value's size, and when.
type ack struct {
	bytes int
	at    time.Duration
}

// quotaProducer is a producer of client id, with small batches (so that
// the rate is measured finely), uncompressed (the quota counts the bytes
// sent, the test the values acknowledged), and a count of the throttles
// it was told.
func quotaProducer(t testing.TB, srv *server.Server, clientID string) (*kgo.Client, *atomic.Int64) {
	t.Helper()
	var throttles atomic.Int64
	cl := newClient(t, srv, kgo.ClientID(clientID), kgo.DefaultProduceTopic("quota"), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(64), kgo.WithHooks(throttleHook{&throttles}))
	return cl, &throttles
}

type throttleHook struct{ n *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	if interval > 0 {
		h.n.Add(1)
	}
}

// produceFor produces 8 KiB records as fast as cl is let for d, and
// returns the acknowledgements.
func produceFor(t testing.TB, cl *kgo.Client, d time.Duration) []ack {
	value := make([]byte, 8<<10)
	_, _ = rand.Read(value)
	var (
		mu   sync.Mutex
		acks []ack
	)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err == nil {
				mu.Lock()
				acks = append(acks, ack{bytes: len(r.Value), at: time.Since(start)})
				mu.Unlock()
			}
		})
	}
	flushCtx, flushCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer flushCancel()
	_ = cl.Flush(flushCtx) // the records buffered when d ended: acknowledged after it, not counted
	mu.Lock()
	defer mu.Unlock()
	return acks
}

// ackedRate is the bytes acknowledged between from and to, per second.
func ackedRate(acks []ack, from, to time.Duration) float64 {
	n := 0
	for _, a := range acks {
		if a.at >= from && a.at < to {
			n += a.bytes
		}
	}
	return float64(n) / (to - from).Seconds()
}

// BenchmarkClientQuota measures how close a producer limited to 1 MB/s by
// a quota comes to it over 30s (BENCHMARKS.md's target: within 5%), after
// a warm-up that lets its first burst pass: make bench-quota. It reports
// the rate acknowledged and its ratio to the quota.
// PURGATORY_QUOTA_WINDOWS sets quota.window.num (Kafka's 11 by default).
func BenchmarkClientQuota(b *testing.B) {
	const limit = 1 << 20
	windows := 11
	if v := os.Getenv("PURGATORY_QUOTA_WINDOWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		windows = n
	}
	warmup, measure := time.Duration(windows+1)*time.Second, 30*time.Second
	cfg := server.Default()
	cfg.Listener, cfg.QuotaWindowNum = "127.0.0.1:0", windows
	srv, _ := runBroker(b, cfg)
	admin := newClient(b, srv)
	createTopic(b, admin, "quota", 1)
	_, err := kadm.NewClient(admin).AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "limited"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: limit}}}})
	require.NoError(b, err)
	for range b.N {
		cl, throttles := quotaProducer(b, srv, "limited")
		acks := produceFor(b, cl, warmup+measure)
		got := ackedRate(acks, warmup, warmup+measure)
		b.ReportMetric(got, "B/s")
		b.ReportMetric(got/limit, "ratio")
		b.Logf("quota.window.num %d: %.0f B/s over %v after %v, %.3f of the quota, %d throttles",
			windows, got, measure, warmup, got/limit, throttles.Load())
	}
}
