package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// describeConfig sends a DescribeConfigs v4 of one resource, with
// synonyms, and returns its configs by name; the resource must be
// answered without an error.
func describeConfig(t *testing.T, c *rawConn, typ kmsg.ConfigResourceType, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	resp := c.RoundTrip(req).(*kmsg.DescribeConfigsResponse)
	require.Len(t, resp.Resources, 1)
	require.Zero(t, resp.Resources[0].ErrorCode, "%v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	out := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, cfg := range resp.Resources[0].Configs {
		out[cfg.Name] = cfg
	}
	return out
}

// levels returns a config's synonyms as "source name=value".
func levels(cfg kmsg.DescribeConfigsResponseResourceConfig) []string {
	var out []string
	for _, s := range cfg.ConfigSynonyms {
		out = append(out, s.Source.String()+" "+s.Name+"="+*s.Value)
	}
	return out
}

func brokerRes(name string, ops ...alterOp) alterRes {
	return alterRes{typ: kmsg.ConfigResourceTypeBroker, name: name, ops: ops}
}

func deleteOp(name string) alterOp {
	return alterOp{name: name, op: kmsg.IncrementalAlterConfigOpDelete}
}

// TestDynamicBrokerConfigs: a broker's own value wins over the cluster
// default, which wins over the static flag; topics without their own
// value take each change at once (their storage config), a topic created
// after takes it too without making it its own, and a topic's own value
// is left alone. DescribeConfigs names the source of each level, on the
// broker and on the topic, with synonyms; validate_only changes nothing;
// AlterConfigs replaces a broker resource's whole set.
func TestDynamicBrokerConfigs(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 1; c.LogRetention = 3_600_000_000_000 }) // 1h
	createTopic(t, s, "a", 1)
	c := dialRaw(t, s)
	got := incrementalAlterConfigs(t, c, 1, false, topicRes("own", setOp("retention.ms", "5")))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, got[0].code)
	createTopic(t, s, "own", 1)
	got = incrementalAlterConfigs(t, c, 1, false, topicRes("own", setOp("retention.ms", "5")))
	require.Zero(t, got[0].code, got[0].msg)
	retention := func(topic string) string {
		t.Helper()
		_, values := ownConfigs(t, s, topic)
		return values["retention.ms"]
	}
	require.Equal(t, "3600000", retention("a"), "the flag's")

	got = incrementalAlterConfigs(t, c, 1, true, brokerRes("", setOp("log.retention.ms", "1000")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "3600000", retention("a"), "validate_only changes nothing")

	// The cluster default.
	got = incrementalAlterConfigs(t, c, 1, false, brokerRes("", setOp("log.retention.ms", "1000"), setOp("min.insync.replicas", "1")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "1000", retention("a"), "at once")
	assert.Equal(t, "5", retention("own"), "a topic's own value is its own")
	topic := describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "a")["retention.ms"]
	assert.Equal(t, "1000", *topic.Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, topic.Source)
	assert.False(t, topic.IsDefault)
	assert.Equal(t, []string{"DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=1000", "STATIC_BROKER_CONFIG log.retention.ms=3600000"}, levels(topic))
	topic = describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "own")["retention.ms"]
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, topic.Source)
	assert.Equal(t, []string{"DYNAMIC_TOPIC_CONFIG retention.ms=5", "DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=1000",
		"STATIC_BROKER_CONFIG log.retention.ms=3600000"}, levels(topic))
	defaults := describeConfig(t, c, kmsg.ConfigResourceTypeBroker, "")
	assert.Len(t, defaults, 2, "the cluster default lists what it sets")
	assert.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, defaults["log.retention.ms"].Source)

	createTopic(t, s, "later", 1)
	assert.Equal(t, "1000", retention("later"), "a topic created after takes the default")
	own, _ := ownConfigs(t, s, "later")
	assert.Empty(t, own, "without making it its own")

	// This broker's own value.
	got = alterConfigs(t, c, 2, false, brokerRes("1", setOp("log.retention.ms", "2000")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "2000", retention("a"))
	broker := describeConfig(t, c, kmsg.ConfigResourceTypeBroker, "1")
	b := broker["log.retention.ms"]
	assert.Equal(t, "2000", *b.Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, b.Source)
	assert.False(t, b.ReadOnly, "dynamic here")
	assert.Equal(t, []string{"DYNAMIC_BROKER_CONFIG log.retention.ms=2000", "DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=1000",
		"STATIC_BROKER_CONFIG log.retention.ms=3600000"}, levels(b))
	assert.True(t, broker["num.partitions"].ReadOnly, "static")
	assert.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, broker["num.partitions"].Source)
	assert.True(t, broker["max.connections"].ReadOnly, "dynamic in Kafka, not here")
	policy := broker["log.cleanup.policy"]
	assert.Equal(t, "delete", *policy.Value, "a dynamic config without a flag: Kafka's default")
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, policy.Source)
	assert.False(t, policy.ReadOnly)
	assert.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "a")["retention.ms"].Source)

	// Back down the levels.
	got = incrementalAlterConfigs(t, c, 1, false, brokerRes("1", deleteOp("log.retention.ms")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "1000", retention("a"), "the default again")
	got = alterConfigs(t, c, 2, false, brokerRes(""))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "3600000", retention("a"), "AlterConfigs replaced the default's whole set: the flag again")
	assert.Nil(t, s.image().Configs(metadata.ClusterDefault))
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, describeConfig(t, c, kmsg.ConfigResourceTypeTopic, "a")["retention.ms"].Source)
}

// TestDynamicBrokerConfigsApplied: a dynamic min.insync.replicas default
// refuses an acks=all produce the topic's replicas cannot satisfy, and
// message.max.bytes bounds the next batch, as the topic configs do.
func TestDynamicBrokerConfigsApplied(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 1 })
	createTopic(t, s, "a", 1)
	c := dialRaw(t, s)
	got := incrementalAlterConfigs(t, c, 1, false, brokerRes("", setOp("min.insync.replicas", "2"), setOp("message.max.bytes", "100")))
	require.Zero(t, got[0].code, got[0].msg)
	st, err := s.data.store.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, int32(2), st.Config().MinISR())
	assert.Equal(t, int32(100), st.Config().MaxMessageBytes)
}

// TestGroupConfigsInTheLog: a group's configs are a record of the
// metadata log, read back by DescribeConfigs and by the share fetch path
// (groupConfig); DELETE brings the default back.
func TestGroupConfigsInTheLog(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	group := func(ops ...alterOp) alterRes {
		return alterRes{typ: kmsg.ConfigResourceTypeGroupConfig, name: "g", ops: ops}
	}
	got := incrementalAlterConfigs(t, c, 1, false, group(setOp("share.auto.offset.reset", "earliest"), setOp("share.record.lock.duration.ms", "15000")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"},
		s.image().Configs(groupConfigResource("g")))
	assert.Equal(t, "earliest", s.groupConfig("g", cfgShareAutoOffsetReset))
	assert.Equal(t, "latest", s.groupConfig("other", cfgShareAutoOffsetReset), "another group: the default")
	assert.Equal(t, int64(15000), s.lockDuration("g").Milliseconds())
	described := describeConfig(t, c, kmsg.ConfigResourceTypeGroupConfig, "g")
	assert.Equal(t, kmsg.ConfigSourceGroupConfig, described[cfgShareAutoOffsetReset].Source)

	got = incrementalAlterConfigs(t, c, 1, false, group(deleteOp("share.auto.offset.reset")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Equal(t, "latest", s.groupConfig("g", cfgShareAutoOffsetReset))
	assert.Equal(t, "15000", s.groupConfig("g", cfgShareLockDuration), "the others kept")
	described = describeConfig(t, c, kmsg.ConfigResourceTypeGroupConfig, "g")
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, described[cfgShareAutoOffsetReset].Source)
}

// TestDynamicConfigsKeptInLogDir: a broker alone keeps its broker and
// group configs in log.dirs across a restart, and a topic whose value
// came from the dynamic default does not make it its own on the way (its
// catalog keeps values, not where they came from).
func TestDynamicConfigsKeptInLogDir(t *testing.T) {
	cfg := durableTestConfig(t.TempDir())
	s, err := New(cfg, nil)
	require.NoError(t, err)
	createTopic(t, s, "a", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs, err := s.ctrl().AlterConfigs(ctx, []controller.ConfigsSpec{
		{Resource: metadata.ClusterDefault, Configs: map[string]string{"log.retention.ms": "1000"}},
		{Resource: groupConfigResource("g"), Configs: map[string]string{"share.auto.offset.reset": "earliest"}},
	}, false, s.checkResourceConfigs)
	require.NoError(t, err)
	require.NoError(t, errors.Join(errs...))
	_, values := ownConfigs(t, s, "a")
	require.Equal(t, "1000", values["retention.ms"])
	require.NoError(t, s.Close(context.Background()))

	s, err = New(cfg, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close(context.Background())) }()
	assert.Equal(t, map[string]string{"log.retention.ms": "1000"}, s.image().Configs(metadata.ClusterDefault))
	assert.Equal(t, "earliest", s.groupConfig("g", cfgShareAutoOffsetReset))
	own, values := ownConfigs(t, s, "a")
	assert.Equal(t, "1000", values["retention.ms"])
	assert.Empty(t, own, "the default's value is not the topic's own")
}

// TestDynamicConfigTables: every config refused as "dynamic in Kafka, not
// here" is a flag of this broker (its message names the flag), and every
// dynamic broker config is the default of a topic config the storage
// has.
func TestDynamicConfigTables(t *testing.T) {
	cfg := Default()
	flags := make(map[string]bool)
	for _, st := range cfg.settings() {
		flags[st.name] = true
	}
	for name := range kafkaDynamic {
		assert.True(t, flags[name], "%s is a flag", name)
		assert.NotContains(t, topicSynonyms, name)
	}
	for name := range kafkaDynamicAbsent {
		assert.False(t, flags[name], "%s is no flag", name)
		assert.NotContains(t, topicSynonyms, name)
		assert.NotContains(t, throttleRates, name, "%s is dynamic here", name)
	}
	topics := make(map[string]bool)
	for _, v := range staticTopicDefaults(cfg).Values() {
		topics[v.Name] = true
	}
	for broker, topic := range topicSynonyms {
		assert.True(t, topics[topic], "%s's topic config %s", broker, topic)
		assert.Equal(t, broker, brokerSynonyms[topic])
	}
}
