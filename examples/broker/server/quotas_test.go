package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// quotaEntry is an AlterClientQuotas entry of parts (type, name; "" name:
// the default) and ops.
func quotaEntry(parts [][2]string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range parts {
		var name *string
		if p[1] != "" {
			name = kmsg.StringPtr(p[1])
		}
		e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: p[0], Name: name})
	}
	e.Ops = ops
	return e
}

func setQuota(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
}

func alterQuotas(t *testing.T, c *rawConn, v int16, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(v)
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp := c.RoundTrip(req).(*kmsg.AlterClientQuotasResponse)
	require.Len(t, resp.Entries, len(entries), "an answer per entry")
	return resp
}

// TestAlterClientQuotasErrors: each of Kafka's refusals is
// INVALID_REQUEST with its message for its entry alone; the other entries
// are committed, and validate_only commits nothing.
func TestAlterClientQuotasErrors(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	user, client, ip := metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP
	tests := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string // "" for success
	}{
		{"empty entity", quotaEntry(nil, setQuota(metadata.QuotaProducerByteRate, 1)), "Invalid empty client quota entity"},
		{"unknown type", quotaEntry([][2]string{{"group", "g"}}, setQuota(metadata.QuotaProducerByteRate, 1)), "Unhandled client quota entity type: group"},
		{"type twice", quotaEntry([][2]string{{user, "a"}, {user, "b"}}), "duplicate entity entry user"},
		{"ip with a client id", quotaEntry([][2]string{{ip, "10.0.0.1"}, {client, "c"}}), "Invalid empty client quota entity"},
		{"bad ip", quotaEntry([][2]string{{ip, "300.0.0.1"}}, setQuota(metadata.QuotaConnectionCreationRate, 1)), "not a valid IP"},
		{"unknown key", quotaEntry([][2]string{{user, "alice"}}, setQuota("fetch_rate", 1)), "Invalid configuration key fetch_rate"},
		{"fractional long", quotaEntry([][2]string{{client, "c1"}}, setQuota(metadata.QuotaConsumerByteRate, 0.5)), "must be a Long value"},
		{"negative", quotaEntry([][2]string{{client, "c2"}}, setQuota(metadata.QuotaRequestPercentage, -5)), "must be a positive number"},
		{"key twice", quotaEntry([][2]string{{client, "c3"}}, setQuota(metadata.QuotaRequestPercentage, 5), setQuota(metadata.QuotaRequestPercentage, 6)),
			"Duplicate quota key"},
		{"valid", kmsg.AlterClientQuotasRequestEntry{}, ""}, // per version, below
	}
	for _, v := range []int16{0, 1} {
		app := fmt.Sprintf("app-v%d", v)
		var entries []kmsg.AlterClientQuotasRequestEntry
		for _, tt := range tests {
			entries = append(entries, tt.entry)
		}
		entries[len(entries)-1] = quotaEntry([][2]string{{user, ""}, {client, app}}, setQuota(metadata.QuotaProducerByteRate, 1024),
			setQuota(metadata.QuotaControllerMutationRate, 0.5))
		for _, validateOnly := range []bool{true, false} {
			resp := alterQuotas(t, c, v, validateOnly, entries...)
			for i, tt := range tests {
				re := resp.Entries[i]
				if tt.msg == "" {
					assert.Zero(t, re.ErrorCode, "%s: %v", tt.name, re.ErrorMessage)
					continue
				}
				assert.Equal(t, kerr.InvalidRequest.Code, re.ErrorCode, tt.name)
				require.NotNil(t, re.ErrorMessage, tt.name)
				assert.Contains(t, *re.ErrorMessage, tt.msg, tt.name)
				assert.False(t, strings.HasPrefix(*re.ErrorMessage, "metadata:"), "Kafka's message, without the package's prefix")
			}
			entity := metadata.QuotaEntity{User: metadata.QuotaDefault, ClientID: metadata.QuotaNamed(app)}
			if validateOnly {
				assert.Nil(t, s.image().QuotaValues(entity), "v%d: validate_only commits nothing", v)
			} else {
				assert.Equal(t, map[string]float64{metadata.QuotaProducerByteRate: 1024, metadata.QuotaControllerMutationRate: 0.5},
					s.image().QuotaValues(entity), "v%d", v)
			}
		}
	}

	twice := alterQuotas(t, c, 1, false, quotaEntry([][2]string{{user, "bob"}}, setQuota(metadata.QuotaProducerByteRate, 1)),
		quotaEntry([][2]string{{user, "bob"}}, setQuota(metadata.QuotaConsumerByteRate, 1)))
	assert.Equal(t, kerr.InvalidRequest.Code, twice.Entries[0].ErrorCode, "an entity twice: both refused")
	assert.Equal(t, kerr.InvalidRequest.Code, twice.Entries[1].ErrorCode)
	assert.Nil(t, s.image().QuotaValues(metadata.QuotaEntity{User: metadata.QuotaNamed("bob")}))
}

// TestDescribeClientQuotas: filters select as Kafka's do, values come
// whole, removals show, and bad filters are top-level errors.
func TestDescribeClientQuotas(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	user, client := metadata.QuotaUser, metadata.QuotaClientID
	alterQuotas(t, c, 1, false,
		quotaEntry([][2]string{{user, "alice"}}, setQuota(metadata.QuotaProducerByteRate, 100), setQuota(metadata.QuotaConsumerByteRate, 200)),
		quotaEntry([][2]string{{user, "alice"}, {client, "app"}}, setQuota(metadata.QuotaRequestPercentage, 12.5)),
		quotaEntry([][2]string{{client, ""}}, setQuota(metadata.QuotaConsumerByteRate, 300)))

	describe := func(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.SetVersion(1)
		req.Components, req.Strict = comps, strict
		return c.RoundTrip(req).(*kmsg.DescribeClientQuotasResponse)
	}
	alice := kmsg.DescribeClientQuotasRequestComponent{EntityType: user, MatchType: 0, Match: kmsg.StringPtr("alice")}
	resp := describe(true, alice)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Entries, 1)
	assert.Equal(t, []kmsg.DescribeClientQuotasResponseEntryEntity{{Type: user, Name: kmsg.StringPtr("alice")}}, resp.Entries[0].Entity)
	assert.Equal(t, []kmsg.DescribeClientQuotasResponseEntryValue{{Key: metadata.QuotaConsumerByteRate, Value: 200},
		{Key: metadata.QuotaProducerByteRate, Value: 100}}, resp.Entries[0].Values)
	assert.Len(t, describe(false, alice).Entries, 2, "not strict: alice's client id too")
	assert.Len(t, describe(false).Entries, 3, "no filter: every entity")

	defaults := describe(false, kmsg.DescribeClientQuotasRequestComponent{EntityType: client, MatchType: 1})
	require.Len(t, defaults.Entries, 1)
	assert.Nil(t, defaults.Entries[0].Entity[0].Name, "the default, as a null name")

	alterQuotas(t, c, 0, false, quotaEntry([][2]string{{user, "alice"}}, kmsg.AlterClientQuotasRequestEntryOp{Key: metadata.QuotaProducerByteRate, Remove: true}))
	resp = describe(true, alice)
	require.Len(t, resp.Entries, 1)
	assert.Equal(t, []kmsg.DescribeClientQuotasResponseEntryValue{{Key: metadata.QuotaConsumerByteRate, Value: 200}}, resp.Entries[0].Values, "removed")

	bad := describe(false, kmsg.DescribeClientQuotasRequestComponent{EntityType: user, MatchType: 0})
	assert.Equal(t, kerr.InvalidRequest.Code, bad.ErrorCode, "EXACT without a name")
	assert.Nil(t, bad.Entries)
	bad = describe(false, kmsg.DescribeClientQuotasRequestComponent{EntityType: "group", MatchType: 2})
	assert.Equal(t, kerr.UnsupportedVersion.Code, bad.ErrorCode, "an unknown type")
	require.NotNil(t, bad.ErrorMessage)
	assert.Equal(t, "Unsupported entity type group", *bad.ErrorMessage)
}

// TestClientQuotasAuthorization: ALTER_CONFIGS and DESCRIBE_CONFIGS on
// the cluster, Kafka's.
func TestClientQuotasAuthorization(t *testing.T) {
	s := newAuthzServer(t)
	c := dialRaw(t, s)
	entry := quotaEntry([][2]string{{metadata.QuotaUser, "alice"}}, setQuota(metadata.QuotaProducerByteRate, 1))
	resp := alterQuotas(t, c, 1, false, entry, entry)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.Entries[0].ErrorCode)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.Entries[1].ErrorCode, "every entry")
	d := kmsg.NewPtrDescribeClientQuotasRequest()
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.RoundTrip(d).(*kmsg.DescribeClientQuotasResponse).ErrorCode)

	grant(t, s, allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, anonymous, kmsg.ACLOperationAlterConfigs))
	assert.Zero(t, alterQuotas(t, c, 1, false, entry).Entries[0].ErrorCode)
	assert.Zero(t, c.RoundTrip(d).(*kmsg.DescribeClientQuotasResponse).ErrorCode, "ALTER_CONFIGS implies DESCRIBE_CONFIGS")
}

// TestClientQuotasKeptInLogDir: a broker alone keeps its client quotas in
// log.dirs, beside its bindings and credentials, across a restart.
func TestClientQuotasKeptInLogDir(t *testing.T) {
	cfg := durableTestConfig(t.TempDir())
	s, err := New(cfg, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	app := "app"
	_, errs, err := s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID, Name: &app}}, Ops: []metadata.QuotaOp{{Key: metadata.QuotaProducerByteRate, Value: 4096}}},
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaUser}}, Ops: []metadata.QuotaOp{{Key: metadata.QuotaConsumerByteRate, Value: 8192}}},
	}, false)
	require.NoError(t, err)
	require.NoError(t, errs[0])
	_, _, err = s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{
		{Parts: []metadata.QuotaPart{{Type: metadata.QuotaUser}}, Ops: []metadata.QuotaOp{{Key: metadata.QuotaConsumerByteRate, Remove: true}}},
	}, false)
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))

	s, err = New(cfg, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close(context.Background())) }()
	q, ok := s.image().ClientQuota(metadata.QuotaProducerByteRate, "anyone", "app")
	require.True(t, ok, "the quota is in the metadata image again")
	assert.Equal(t, float64(4096), q.Limit)
	assert.Nil(t, s.image().QuotaValues(metadata.QuotaEntity{User: metadata.QuotaDefault}), "the removed one is not")
}

// TestProduceAndFetchThrottled: a produce that takes its client over
// producer_byte_rate is answered with its throttle time and mutes the
// connection; another client id is not throttled; a fetch over
// consumer_byte_rate is answered empty with its throttle time.
func TestProduceAndFetchThrottled(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QuotaWindowNum = 2 })
	createTopic(t, s, "q", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	test := "test" // the raw connections' client id
	_, _, err := s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID, Name: &test}},
		Ops: []metadata.QuotaOp{{Key: metadata.QuotaProducerByteRate, Value: 1024}, {Key: metadata.QuotaConsumerByteRate, Value: 1024}}}}, false)
	require.NoError(t, err)

	big := strings.Repeat("x", 8<<10)
	c := dialRaw(t, s)
	sp := c.RoundTrip(produceRequest(9, 1, "q", 0, batchtest.Values(time.Now().UnixMilli(), big)))
	pr := sp.(*kmsg.ProduceResponse)
	require.Zero(t, pr.Topics[0].Partitions[0].ErrorCode, "appended")
	// 8 KiB over a window of a second against 1 KiB/s: about 7s, capped
	// at the two windows.
	assert.Equal(t, int32(2000), pr.ThrottleMillis, "capped at quota.window.num windows")
	require.Eventually(t, func() bool { return gathered(t, s, "broker_connections_muted", "") == 1 },
		5*time.Second, time.Millisecond, "the connection is muted")

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxBytes, fetch.MaxWaitMillis = 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "q"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	tc := newTestConn(t, s)
	r := tc.request(fetch)
	r.ClientID = "other" // no quota
	handler{s}.ServeKafka(r)
	fresp := tc.await(r).(*kmsg.FetchResponse)
	require.Len(t, fresp.Topics, 1)
	assert.NotEmpty(t, fresp.Topics[0].Partitions[0].RecordBatches, "another client id reads")
	assert.Zero(t, fresp.ThrottleMillis)

	other := dialRaw(t, s) // client id test too, on a new connection: its quota is the same
	fresp = other.RoundTrip(fetch).(*kmsg.FetchResponse)
	assert.Positive(t, fresp.ThrottleMillis, "8 KiB against 1 KiB/s")
	assert.Empty(t, fresp.Topics, "answered empty, as Kafka answers a throttled fetch")
	assert.Positive(t, gathered(t, s, "broker_quota_throttle_time_seconds", "fetch"))
	assert.Positive(t, gathered(t, s, "broker_quota_throttle_time_seconds", "produce"))
}

// gathered returns the value of the gauge, or the count of the
// histogram, named name in s's registry, of quota type typ if not "".
func gathered(t *testing.T, s *Server, name, typ string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := typ == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == "type" && l.GetValue() == typ)
			}
			switch {
			case !match:
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			default:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
