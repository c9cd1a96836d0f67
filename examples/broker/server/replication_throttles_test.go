package server

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// TestReplicationThrottleConfigs: leader.replication.throttled.rate and
// follower.replication.throttled.rate are dynamic broker configs, the
// broker's own over the cluster default over Long.MAX_VALUE, applied to
// the broker's replication quotas at once and described with their
// source; a value Kafka's LONG at least 0 refuses is INVALID_REQUEST with
// Kafka's message. The topic configs leader.replication.throttled.replicas
// and follower.replication.throttled.replicas are set, validated and
// described as the other topic configs.
func TestReplicationThrottleConfigs(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 1 })
	createTopic(t, s, "a", 2)
	c := dialRaw(t, s)

	broker := describeConfig(t, c, kmsg.ConfigResourceTypeBroker, "1")
	for _, name := range []string{leaderThrottleRate, followerThrottleRate} {
		rate, ok := broker[name]
		require.True(t, ok, "%s is described", name)
		assert.Equal(t, "9223372036854775807", *rate.Value, "%s: Kafka's default, unthrottled", name)
		assert.Equal(t, kmsg.ConfigSourceDefaultConfig, rate.Source)
		assert.False(t, rate.ReadOnly, "%s is dynamic", name)
	}
	assert.Equal(t, int64(math.MaxInt64), s.replQuotas.leader.Limit())

	got := incrementalAlterConfigs(t, c, 1, false, brokerRes("", setOp(leaderThrottleRate, "1000")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, int64(1000), s.replQuotas.leader.Limit(), "the cluster default, at once")
	got = incrementalAlterConfigs(t, c, 1, false, brokerRes("1", setOp(leaderThrottleRate, "500"), setOp(followerThrottleRate, "700")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, int64(500), s.replQuotas.leader.Limit(), "the broker's own wins")
	assert.Equal(t, int64(700), s.replQuotas.follower.Limit())
	rate := describeConfig(t, c, kmsg.ConfigResourceTypeBroker, "1")[leaderThrottleRate]
	assert.Equal(t, "500", *rate.Value)
	assert.Equal(t, []string{"DYNAMIC_BROKER_CONFIG leader.replication.throttled.rate=500",
		"DYNAMIC_DEFAULT_BROKER_CONFIG leader.replication.throttled.rate=1000",
		"DEFAULT_CONFIG leader.replication.throttled.rate=9223372036854775807"}, levels(rate))

	for _, tc := range []struct{ value, msg string }{
		{"-1", "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
		{"fast", "Invalid value fast for configuration leader.replication.throttled.rate: Not a number of type LONG"},
	} {
		got = incrementalAlterConfigs(t, c, 1, false, brokerRes("1", setOp(leaderThrottleRate, tc.value)))
		assert.Equal(t, kerr.InvalidRequest.Code, got[0].code, tc.value)
		assert.Contains(t, got[0].msg, tc.msg)
	}
	assert.Equal(t, int64(500), s.replQuotas.leader.Limit(), "a refused value changes nothing")

	got = incrementalAlterConfigs(t, c, 1, false, brokerRes("1", deleteOp(leaderThrottleRate), deleteOp(followerThrottleRate)))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, int64(1000), s.replQuotas.leader.Limit(), "the cluster default again")
	assert.Equal(t, int64(math.MaxInt64), s.replQuotas.follower.Limit(), "unthrottled again")

	// The topic configs.
	got = incrementalAlterConfigs(t, c, 1, false, topicRes("a", setOp(storage.ConfigLeaderThrottledReplicas, "0:1, 1:2"),
		setOp(storage.ConfigFollowerThrottledReplicas, "*")))
	require.Zero(t, got[0].code, got[0].msg)
	st, err := s.data.store.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, storage.ThrottledReplicas("0:1,1:2"), st.Config().LeaderThrottled)
	assert.Equal(t, storage.AllThrottled, st.Config().FollowerThrottled)
	topic := describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "a")
	assert.Equal(t, "0:1,1:2", *topic[storage.ConfigLeaderThrottledReplicas].Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, topic[storage.ConfigLeaderThrottledReplicas].Source)
	got = incrementalAlterConfigs(t, c, 1, false, topicRes("a", setOp(storage.ConfigLeaderThrottledReplicas, "0:1,,1:2")))
	assert.Equal(t, kerr.InvalidConfig.Code, got[0].code, "an empty entry inside the list")
	two := "0:2"
	got = incrementalAlterConfigs(t, c, 1, false, topicRes("a",
		alterOp{name: storage.ConfigLeaderThrottledReplicas, value: &two, op: kmsg.IncrementalAlterConfigOpAppend}))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, storage.ThrottledReplicas("0:1,1:2,0:2"), st.Config().LeaderThrottled, "a LIST: APPEND adds to it")
	got = incrementalAlterConfigs(t, c, 1, false, topicRes("a", deleteOp(storage.ConfigLeaderThrottledReplicas)))
	require.Zero(t, got[0].code, got[0].msg)
	listed := describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "a")[storage.ConfigLeaderThrottledReplicas]
	assert.Equal(t, "", *listed.Value, "none, Kafka's default")
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, listed.Source)
}
