package server

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestShareGroupFlags: the group.share.* broker configs default to
// Kafka's, and a value out of Kafka's ranges is refused at start.
func TestShareGroupFlags(t *testing.T) {
	cfg := Default()
	assert.Equal(t, 45*time.Second, cfg.GroupShareSessionTimeout)
	assert.Equal(t, 45*time.Second, cfg.GroupShareMinSessionTimeout)
	assert.Equal(t, 60*time.Second, cfg.GroupShareMaxSessionTimeout)
	assert.Equal(t, 5*time.Second, cfg.GroupShareHeartbeatInterval)
	assert.Equal(t, 5*time.Second, cfg.GroupShareMinHeartbeatInterval)
	assert.Equal(t, 15*time.Second, cfg.GroupShareMaxHeartbeatInterval)
	assert.Equal(t, 30*time.Second, cfg.GroupShareRecordLockDuration)
	assert.Equal(t, 15*time.Second, cfg.GroupShareMinRecordLockDuration)
	assert.Equal(t, 60*time.Second, cfg.GroupShareMaxRecordLockDuration)
	assert.Equal(t, int16(5), cfg.GroupShareDeliveryCountLimit)
	assert.Equal(t, 2000, cfg.GroupSharePartitionMaxRecordLocks)

	tests := []struct {
		name    string
		args    []string
		wantErr string // "" when valid
	}{
		{"defaults", nil, ""},
		{"set", []string{"--group.share.session.timeout.ms=50000", "--group.share.heartbeat.interval.ms=6000",
			"--group.share.record.lock.duration.ms=20000", "--group.share.delivery.count.limit=3",
			"--group.share.partition.max.record.locks=500"}, ""},
		{"session below its minimum", []string{"--group.share.session.timeout.ms=30000"}, "group.share.session.timeout.ms"},
		{"session above its maximum", []string{"--group.share.session.timeout.ms=70000"}, "group.share.session.timeout.ms"},
		{"heartbeat above its maximum", []string{"--group.share.heartbeat.interval.ms=20000"}, "group.share.heartbeat.interval.ms"},
		{"heartbeat not below the session", []string{"--group.share.min.session.timeout.ms=6000",
			"--group.share.session.timeout.ms=6000", "--group.share.heartbeat.interval.ms=6000"}, "group.share.heartbeat.interval.ms"},
		{"lock duration above its maximum", []string{"--group.share.record.lock.duration.ms=90000"}, "group.share.record.lock.duration.ms"},
		{"lock duration minimum too large", []string{"--group.share.min.record.lock.duration.ms=40000"}, "group.share.min.record.lock.duration.ms"},
		{"delivery count limit", []string{"--group.share.delivery.count.limit=11"}, "group.share.delivery.count.limit"},
		{"max record locks", []string{"--group.share.partition.max.record.locks=50"}, "group.share.partition.max.record.locks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			fs := flag.NewFlagSet("broker", flag.ContinueOnError)
			cfg.RegisterFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			if tt.wantErr == "" {
				assert.NoError(t, cfg.validate())
				return
			}
			assert.ErrorContains(t, cfg.validate(), tt.wantErr)
		})
	}
}

// groupConfigs describes group's GROUP resource: each config's value and
// whether it is the default.
func groupConfigs(t *testing.T, tc *testConn, s *Server, group string) (map[string]string, map[string]bool) {
	t.Helper()
	d := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	d.Resources = append(d.Resources, dr)
	resp := tc.await(tc.serve(s, d)).(*kmsg.DescribeConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode)
	values, isDefault := map[string]string{}, map[string]bool{}
	for _, c := range resp.Resources[0].Configs {
		values[c.Name], isDefault[c.Name] = *c.Value, c.IsDefault
	}
	return values, isDefault
}

// TestShareGroupFlagsApplied: the broker's group.share.* configs reach
// where they are used: the interval a member is told, the lock duration
// a fetch is answered, the records a window holds at most and the
// deliveries after which a released record is archived; DescribeConfigs
// of a GROUP resource shows the broker's values as the defaults.
func TestShareGroupFlagsApplied(t *testing.T) {
	s := newTestServer(t, func(cfg *Config) {
		cfg.GroupShareSessionTimeout = 50 * time.Second
		cfg.GroupShareHeartbeatInterval = 6 * time.Second
		cfg.GroupShareRecordLockDuration = 20 * time.Second
		cfg.GroupShareDeliveryCountLimit = 2
		cfg.GroupSharePartitionMaxRecordLocks = 100
	})
	topic := createTopic(t, s, "share-flags", 1)
	tc := newTestConn(t, s)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", "a", []string{"share-flags"}
	joined := tc.await(tc.serve(s, hb)).(*kmsg.ShareGroupHeartbeatResponse)
	require.Zero(t, joined.ErrorCode)
	assert.Equal(t, int32(6000), joined.HeartbeatIntervalMillis, "group.share.heartbeat.interval.ms")

	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	values := make([]string, 150)
	for i := range values {
		values[i] = "v"
	}
	tc.await(tc.serve(s, produceRequest(9, 1, "share-flags", 0, batchtest.Values(nowMs(), values...))))
	fetch := func(epoch int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := shareFetchReq(topic.ID, "a", epoch, 0)
		req.ShareAcquireMode, req.MaxRecords = 1, 500 // record_limit: no batch rounds past the bound
		return tc.await(tc.serve(s, req)).(*kmsg.ShareFetchResponse)
	}
	release := func(epoch int32, first, last int64) {
		t.Helper()
		ack := tc.await(tc.serve(s, shareAckReq(topic.ID, "a", epoch, first, last, 2))).(*kmsg.ShareAcknowledgeResponse)
		require.Zero(t, ack.ErrorCode)
		require.Zero(t, ack.Topics[0].Partitions[0].ErrorCode)
	}
	resp := fetch(0)
	assert.Equal(t, int32(20000), resp.AcquisitionLockTimeoutMillis, "group.share.record.lock.duration.ms")
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 99, DeliveryCount: 1}},
		acquired(t, resp).AcquiredRecords, "group.share.partition.max.record.locks: 100 in flight at most")
	release(1, 0, 99)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 99, DeliveryCount: 2}},
		acquired(t, fetch(2)).AcquiredRecords, "the released records again; nothing new, the window is full")
	release(3, 0, 99)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 100, LastOffset: 149, DeliveryCount: 1}},
		acquired(t, fetch(4)).AcquiredRecords, "group.share.delivery.count.limit 2: the twice-released records are archived")

	got, isDefault := groupConfigs(t, tc, s, "g")
	assert.Equal(t, map[string]string{
		cfgShareAutoOffsetReset:   "earliest",
		cfgShareLockDuration:      "20000",
		cfgShareSessionTimeout:    "50000",
		cfgShareHeartbeatInterval: "6000",
		cfgShareIsolationLevel:    "read_uncommitted",
	}, got, "the broker's values as the defaults")
	assert.False(t, isDefault[cfgShareAutoOffsetReset])
	assert.True(t, isDefault[cfgShareSessionTimeout])
}

// TestShareGroupTimeoutConfigs: share.session.timeout.ms and
// share.heartbeat.interval.ms are group configs within Kafka's
// group.share.min/max.* ranges, the session longer than the interval
// (INVALID_CONFIG otherwise); a group's interval is what its members are
// told, another group's the broker's.
func TestShareGroupTimeoutConfigs(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "share-timeouts", 1)
	tc := newTestConn(t, s)
	tests := []struct {
		name, config, value string
		code                int16
	}{
		{"session in range", cfgShareSessionTimeout, "50000", 0},
		{"session below group.share.min.session.timeout.ms", cfgShareSessionTimeout, "44999", 40},
		{"session above group.share.max.session.timeout.ms", cfgShareSessionTimeout, "60001", 40},
		{"session not a number", cfgShareSessionTimeout, "soon", 40},
		{"interval in range", cfgShareHeartbeatInterval, "7000", 0},
		{"interval below group.share.min.heartbeat.interval.ms", cfgShareHeartbeatInterval, "4999", 40},
		{"interval above group.share.max.heartbeat.interval.ms", cfgShareHeartbeatInterval, "15001", 40},
		{"lock duration above group.share.max.record.lock.duration.ms", cfgShareLockDuration, "60001", 40},
		{"isolation level", cfgShareIsolationLevel, "read_committed", 0},
		{"isolation level unknown", cfgShareIsolationLevel, "serializable", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tc.await(tc.serve(s, groupConfigReq("other", tt.config, tt.value))).(*kmsg.IncrementalAlterConfigsResponse)
			assert.Equal(t, tt.code, resp.Resources[0].ErrorCode)
		})
	}

	resp := tc.await(tc.serve(s, groupConfigReq("g", cfgShareHeartbeatInterval, "7000"))).(*kmsg.IncrementalAlterConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode)
	join := func(group string) int32 {
		t.Helper()
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "m", []string{"share-timeouts"}
		joined := tc.await(tc.serve(s, hb)).(*kmsg.ShareGroupHeartbeatResponse)
		require.Zero(t, joined.ErrorCode)
		return joined.HeartbeatIntervalMillis
	}
	assert.Equal(t, int32(7000), join("g"), "g's own share.heartbeat.interval.ms")
	assert.Equal(t, int32(5000), join("h"), "h has none: the broker's")
}

// TestShareSessionLongerThanInterval: with the broker's ranges allowing
// it, a group whose session timeout would not exceed its heartbeat
// interval is INVALID_CONFIG, its own values or the broker's compared.
func TestShareSessionLongerThanInterval(t *testing.T) {
	s := newTestServer(t, func(cfg *Config) {
		cfg.GroupShareMinSessionTimeout = 6 * time.Second
	})
	tc := newTestConn(t, s)
	resp := tc.await(tc.serve(s, groupConfigReq("g", cfgShareSessionTimeout, "6000"))).(*kmsg.IncrementalAlterConfigsResponse)
	require.Zero(t, resp.Resources[0].ErrorCode, "6 s against the broker's 5 s interval")
	resp = tc.await(tc.serve(s, groupConfigReq("g", cfgShareHeartbeatInterval, "6000"))).(*kmsg.IncrementalAlterConfigsResponse)
	assert.Equal(t, int16(40), resp.Resources[0].ErrorCode, "an interval equal to the group's session timeout")
}
