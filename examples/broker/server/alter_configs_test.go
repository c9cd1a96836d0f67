package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// configAnswer is one resource's answer to either API.
type configAnswer struct {
	typ  kmsg.ConfigResourceType
	name string
	code int16
	msg  string
}

// alterConfigs sends an AlterConfigs of version v with one resource per
// entry of res, and returns each resource's answer.
func alterConfigs(t *testing.T, c *rawConn, v int16, validateOnly bool, res ...alterRes) []configAnswer {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(v)
	req.ValidateOnly = validateOnly
	for _, r := range res {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		for _, op := range r.ops {
			rr.Configs = append(rr.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: op.name, Value: op.value})
		}
		req.Resources = append(req.Resources, rr)
	}
	return configAnswers(c.RoundTrip(req).(*kmsg.AlterConfigsResponse).Resources)
}

// incrementalAlterConfigs is alterConfigs for IncrementalAlterConfigs.
func incrementalAlterConfigs(t *testing.T, c *rawConn, v int16, validateOnly bool, res ...alterRes) []configAnswer {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(v)
	req.ValidateOnly = validateOnly
	for _, r := range res {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		for _, op := range r.ops {
			rr.Configs = append(rr.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: op.name, Value: op.value, Op: op.op})
		}
		req.Resources = append(req.Resources, rr)
	}
	var rs []kmsg.AlterConfigsResponseResource
	for _, sr := range c.RoundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources {
		rs = append(rs, kmsg.AlterConfigsResponseResource(sr)) // the same fields
	}
	return configAnswers(rs)
}

// configAnswers reads a response's resources.
func configAnswers(rs []kmsg.AlterConfigsResponseResource) []configAnswer {
	var out []configAnswer
	for _, sr := range rs {
		a := configAnswer{typ: sr.ResourceType, name: sr.ResourceName, code: sr.ErrorCode}
		if sr.ErrorMessage != nil {
			a.msg = *sr.ErrorMessage
		}
		out = append(out, a)
	}
	return out
}

type alterOp struct {
	name  string
	value *string
	op    kmsg.IncrementalAlterConfigOp
}

type alterRes struct {
	typ  kmsg.ConfigResourceType
	name string
	ops  []alterOp
}

func topicRes(name string, ops ...alterOp) alterRes {
	return alterRes{typ: kmsg.ConfigResourceTypeTopic, name: name, ops: ops}
}

func setOp(name, value string) alterOp {
	return alterOp{name: name, value: &value, op: kmsg.IncrementalAlterConfigOpSet}
}

// ownConfigs returns topic's own configs in s's image and its storage
// config's values, by name.
func ownConfigs(t *testing.T, s *Server, topic string) (own, values map[string]string) {
	t.Helper()
	mt, err := s.image().Topic(topic)
	require.NoError(t, err)
	st, err := s.data.store.Topic(topic)
	require.NoError(t, err)
	values = make(map[string]string)
	for _, v := range st.Config().Values() {
		values[v.Name] = v.Value
	}
	return mt.Configs, values
}

// TestAlterConfigsEveryVersion: AlterConfigs replaces a topic's own
// configs whole, in the image and the storage, at every version;
// validate_only changes nothing.
func TestAlterConfigsEveryVersion(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, v := range versions(0, 2) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := fmt.Sprintf("alter-v%d", v)
			createTopic(t, s, name, 2)
			got := alterConfigs(t, c, v, true, topicRes(name, setOp("retention.ms", "1000")))
			require.Equal(t, []configAnswer{{kmsg.ConfigResourceTypeTopic, name, 0, ""}}, got)
			own, _ := ownConfigs(t, s, name)
			assert.Empty(t, own, "validate_only changes nothing")

			got = alterConfigs(t, c, v, false, topicRes(name, setOp("retention.ms", "1000"), setOp("max.message.bytes", "300")))
			require.Equal(t, []configAnswer{{kmsg.ConfigResourceTypeTopic, name, 0, ""}}, got)
			own, values := ownConfigs(t, s, name)
			assert.Equal(t, map[string]string{"retention.ms": "1000", "max.message.bytes": "300"}, own)
			assert.Equal(t, "1000", values["retention.ms"], "the storage has it once answered")
			assert.Equal(t, "300", values["max.message.bytes"])

			got = alterConfigs(t, c, v, false, topicRes(name, setOp("min.insync.replicas", "1")))
			require.Zero(t, got[0].code)
			own, values = ownConfigs(t, s, name)
			assert.Equal(t, map[string]string{"min.insync.replicas": "1"}, own, "the configs not named lose their own values")
			assert.Equal(t, "604800000", values["retention.ms"], "back to the default")
		})
	}
}

// TestIncrementalAlterConfigsEveryVersion: SET and DELETE change one
// config each and leave the others.
func TestIncrementalAlterConfigsEveryVersion(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, v := range versions(0, 1) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := fmt.Sprintf("incremental-v%d", v)
			createTopic(t, s, name, 1)
			got := incrementalAlterConfigs(t, c, v, false, topicRes(name, setOp("retention.ms", "1000"), setOp("max.message.bytes", "300")))
			require.Equal(t, []configAnswer{{kmsg.ConfigResourceTypeTopic, name, 0, ""}}, got)
			got = incrementalAlterConfigs(t, c, v, true, topicRes(name, alterOp{name: "retention.ms", op: kmsg.IncrementalAlterConfigOpDelete}))
			require.Zero(t, got[0].code)
			own, _ := ownConfigs(t, s, name)
			assert.Equal(t, map[string]string{"retention.ms": "1000", "max.message.bytes": "300"}, own, "validate_only changes nothing")

			got = incrementalAlterConfigs(t, c, v, false, topicRes(name,
				alterOp{name: "retention.ms", op: kmsg.IncrementalAlterConfigOpDelete}, setOp("unclean.leader.election.enable", "TRUE")))
			require.Zero(t, got[0].code, got[0].msg)
			own, values := ownConfigs(t, s, name)
			assert.Equal(t, map[string]string{"max.message.bytes": "300", "unclean.leader.election.enable": "TRUE"}, own)
			assert.Equal(t, "604800000", values["retention.ms"])
			assert.Equal(t, "true", values["unclean.leader.election.enable"])

			// cleanup.policy is a list: APPEND and SUBTRACT edit it.
			got = incrementalAlterConfigs(t, c, v, false, topicRes(name,
				alterOp{name: "cleanup.policy", value: new("compact"), op: kmsg.IncrementalAlterConfigOpAppend}))
			require.Zero(t, got[0].code, got[0].msg)
			_, values = ownConfigs(t, s, name)
			assert.Equal(t, "compact,delete", values["cleanup.policy"], "appended to the default, delete")
			got = incrementalAlterConfigs(t, c, v, false, topicRes(name,
				alterOp{name: "cleanup.policy", value: new("delete"), op: kmsg.IncrementalAlterConfigOpSubtract}))
			require.Zero(t, got[0].code, got[0].msg)
			own, values = ownConfigs(t, s, name)
			assert.Equal(t, "compact", own["cleanup.policy"])
			assert.Equal(t, "compact", values["cleanup.policy"])
		})
	}
}

// TestAlterConfigsErrors: every error case of both APIs, each resource
// answered in its place, and nothing changed by a refused one.
func TestAlterConfigsErrors(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	createTopic(t, s, "a", 1)
	c := dialRaw(t, s)
	null := alterOp{name: "retention.ms", op: kmsg.IncrementalAlterConfigOpSet}
	broker := func(name string, ops ...alterOp) alterRes {
		return alterRes{typ: kmsg.ConfigResourceTypeBroker, name: name, ops: ops}
	}
	tests := []struct {
		name        string
		incremental bool
		res         alterRes
		want        *kerr.Error
		message     string
	}{
		{"unknown topic", false, topicRes("nope", setOp("retention.ms", "1")), kerr.UnknownTopicOrPartition, ""},
		{"unknown topic, bad value first", false, topicRes("nope", setOp("retention.ms", "x")), kerr.InvalidConfig, "retention.ms"},
		{"unsupported name", false, topicRes("a", setOp("message.timestamp.type", "LogAppendTime")), kerr.InvalidConfig, "message.timestamp.type is not supported"},
		{"bad value", false, topicRes("a", setOp("max.message.bytes", "-5")), kerr.InvalidConfig, `max.message.bytes="-5"`},
		{"bad boolean", true, topicRes("a", setOp("unclean.leader.election.enable", "yes")), kerr.InvalidConfig, "not true or false"},
		{"null value", false, topicRes("a", null), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"null value, incremental SET", true, topicRes("a", null), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"a config twice", true, topicRes("a", setOp("retention.ms", "1"), setOp("retention.ms", "2")), kerr.InvalidRequest,
			"Error due to duplicate config keys"},
		{"APPEND", true, topicRes("a", alterOp{name: "retention.ms", value: new("1"), op: kmsg.IncrementalAlterConfigOpAppend}),
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"SUBTRACT", true, topicRes("a", alterOp{name: "retention.ms", value: new("1"), op: kmsg.IncrementalAlterConfigOpSubtract}),
			kerr.InvalidConfig, "Can't SUBTRACT to key retention.ms because its type is not LIST."},
		{"APPEND, an item no list takes", true, topicRes("a", alterOp{name: "cleanup.policy", value: new("shrink"), op: kmsg.IncrementalAlterConfigOpAppend}),
			kerr.InvalidConfig, `cleanup.policy="delete,shrink"`},
		{"unknown operation", true, topicRes("a", alterOp{name: "retention.ms", value: new("1"), op: 9}), kerr.InvalidRequest,
			"Unknown operations type 9"},
		{"static broker config", false, broker("3", setOp("log.dirs", "/tmp"), setOp("num.partitions", "2")), kerr.InvalidRequest,
			"Cannot update these configs dynamically: Set(log.dirs, num.partitions)"},
		{"broker config dynamic in Kafka only", true, broker("", setOp("max.connections", "1")), kerr.InvalidRequest,
			"--max.connections"},
		{"broker config dynamic in Kafka, absent here", true, broker("3", setOp("num.io.threads", "4")), kerr.InvalidRequest,
			"Cannot update these configs dynamically: Set(num.io.threads): Kafka can, this broker does not have them"},
		{"unknown broker config", true, broker("", setOp("no.such.config", "1")), kerr.InvalidRequest,
			"Unknown broker configs: Set(no.such.config)"},
		{"bad broker config value", true, broker("3", setOp("log.retention.ms", "x")), kerr.InvalidRequest,
			"Invalid value x for configuration log.retention.ms"},
		{"APPEND to a broker config not a list", true, broker("3", alterOp{name: "log.retention.ms", value: new("1"), op: kmsg.IncrementalAlterConfigOpAppend}),
			kerr.InvalidConfig, "Can't APPEND to key log.retention.ms because its type is not LIST."},
		{"bad group config", true, alterRes{typ: kmsg.ConfigResourceTypeGroupConfig, name: "g", ops: []alterOp{setOp("share.auto.offset.reset", "middle")}},
			kerr.InvalidConfig, "share.auto.offset.reset"},
		{"unknown group config", false, alterRes{typ: kmsg.ConfigResourceTypeGroupConfig, name: "g", ops: []alterOp{setOp("group.nope", "1")}},
			kerr.InvalidConfig, "group.nope"},
		{"another broker", true, broker("4", setOp("message.max.bytes", "1")), kerr.InvalidRequest,
			"Unexpected broker id, expected 3, but received 4"},
		{"a broker that is no number", false, broker("x"), kerr.InvalidRequest, "Node id must be an integer, but it is: x"},
		{"broker logger", true, alterRes{typ: kmsg.ConfigResourceTypeBrokerLogger, name: "3"}, kerr.InvalidRequest, "Unknown resource type 8"},
		{"client metrics", false, alterRes{typ: kmsg.ConfigResourceType(16), name: "m"}, kerr.InvalidRequest, "Unknown resource type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []configAnswer
			if tc.incremental {
				got = incrementalAlterConfigs(t, c, 1, false, tc.res)
			} else {
				got = alterConfigs(t, c, 2, false, tc.res)
			}
			require.Len(t, got, 1)
			assert.Equal(t, tc.res.typ, got[0].typ)
			assert.Equal(t, tc.res.name, got[0].name)
			assert.Equal(t, tc.want.Code, got[0].code, "got %v: %s", kerr.ErrorForCode(got[0].code), got[0].msg)
			if tc.message != "" {
				assert.Contains(t, got[0].msg, tc.message)
			}
		})
	}
	own, _ := ownConfigs(t, s, "a")
	assert.Empty(t, own, "nothing changed")

	got := alterConfigs(t, c, 2, false, alterRes{typ: kmsg.ConfigResourceTypeBroker, name: "3"})
	assert.Zero(t, got[0].code, "a broker resource that changes nothing: nothing dynamic to replace")
}

// TestAlterConfigsDuplicates: a resource listed twice is INVALID_REQUEST
// at each listing, and does not stop the others, which are decided in
// one record.
func TestAlterConfigsDuplicates(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "a", 1)
	createTopic(t, s, "b", 1)
	createTopic(t, s, "c", 1)
	c := dialRaw(t, s)
	index := s.image().Index
	got := incrementalAlterConfigs(t, c, 1, false, topicRes("a", setOp("retention.ms", "1")), topicRes("b", setOp("retention.ms", "2")),
		topicRes("a", setOp("retention.ms", "3")), topicRes("c", setOp("retention.ms", "4")))
	require.Len(t, got, 4)
	for i, want := range []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code, 0} {
		assert.Equal(t, want, got[i].code, "resource %d", i)
	}
	assert.Contains(t, got[0].msg, "Each resource must appear at most once.")
	assert.Equal(t, index+1, s.image().Index, "b and c in one record")
	own, _ := ownConfigs(t, s, "a")
	assert.Empty(t, own)
	own, _ = ownConfigs(t, s, "c")
	assert.Equal(t, map[string]string{"retention.ms": "4"}, own)
}

// TestAlterConfigsLive: the storage applies a change at once: the next
// produce sees a new max.message.bytes, the next acks=all a new
// min.insync.replicas; DescribeConfigs shows the new values and sources.
func TestAlterConfigsLive(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "live", 1)
	c := dialRaw(t, s)
	big := batchtest.Values(time.Now().UnixMilli(), string(make([]byte, 400)))
	require.Zero(t, produced(t, c.RoundTrip(produceRequest(9, -1, "live", 0, big))).ErrorCode)

	got := incrementalAlterConfigs(t, c, 1, false, topicRes("live", setOp("max.message.bytes", "300"), setOp("min.insync.replicas", "2")))
	require.Zero(t, got[0].code, got[0].msg)
	sp := produced(t, c.RoundTrip(produceRequest(9, 1, "live", 0, big)))
	assert.Equal(t, kerr.MessageTooLarge.Code, sp.ErrorCode, "the next produce sees the new max.message.bytes")
	small := batchtest.Values(time.Now().UnixMilli(), "x")
	sp = produced(t, c.RoundTrip(produceRequest(9, -1, "live", 0, small)))
	assert.Equal(t, kerr.NotEnoughReplicas.Code, sp.ErrorCode, "the next acks=all sees the new min.insync.replicas")

	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "live"
	req.Resources = append(req.Resources, rr)
	described := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range c.RoundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		described[cfg.Name] = cfg
	}
	assert.Equal(t, "300", *described["max.message.bytes"].Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, described["max.message.bytes"].Source)
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, described["min.insync.replicas"].Source)
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, described["retention.ms"].Source)

	// Back to a value equal to the default: still the topic's own.
	got = alterConfigs(t, c, 2, false, topicRes("live", setOp("max.message.bytes", "1048588")))
	require.Zero(t, got[0].code, got[0].msg)
	assert.Zero(t, produced(t, c.RoundTrip(produceRequest(9, -1, "live", 0, big))).ErrorCode, "raised, and min.insync.replicas back to 1")
	for _, cfg := range c.RoundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		described[cfg.Name] = cfg
	}
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, described["max.message.bytes"].Source, "set, though at the default's value")
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, described["min.insync.replicas"].Source)
	o, err := topic.Partitions[0].Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(2), o.LogEnd)
}

// TestAlterConfigsAuthorization: ALTER_CONFIGS on the topic, else
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; on the cluster for
// a broker resource, else CLUSTER_AUTHORIZATION_FAILED.
func TestAlterConfigsAuthorization(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "mine", 1)
	createTopic(t, s, "theirs", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "mine", anonymous, kmsg.ACLOperationAlterConfigs))
	c := dialRaw(t, s)
	res := []alterRes{topicRes("mine", setOp("retention.ms", "1")), topicRes("theirs", setOp("retention.ms", "1")),
		topicRes("nowhere", setOp("retention.ms", "1")), {typ: kmsg.ConfigResourceTypeBroker, name: "1"}}
	want := []int16{0, kerr.TopicAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code}
	for _, got := range [][]configAnswer{alterConfigs(t, c, 2, false, res...), incrementalAlterConfigs(t, c, 1, false, res...)} {
		require.Len(t, got, 4)
		for i := range want {
			assert.Equal(t, want[i], got[i].code, "resource %d", i)
		}
	}
	own, _ := ownConfigs(t, s, "theirs")
	assert.Empty(t, own)
	own, _ = ownConfigs(t, s, "mine")
	assert.Equal(t, map[string]string{"retention.ms": "1"}, own)
}
