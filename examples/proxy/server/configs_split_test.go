package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// TestConfigNode: a broker or broker-logger resource goes to the
// upstream broker it names when the metadata lists it; everything else,
// and a name that is not a listed id, to any broker.
func TestConfigNode(t *testing.T) {
	const anyNode = 1
	listed := func(id int32) bool { return id == 1 || id == 2 || id == 3 }
	for _, tc := range []struct {
		name string
		key  configKey
		want int32
	}{
		{"a topic", configKey{kmsg.ConfigResourceTypeTopic, "2"}, anyNode},
		{"a group", configKey{kmsg.ConfigResourceTypeGroupConfig, "3"}, anyNode},
		{"a listed broker", configKey{kmsg.ConfigResourceTypeBroker, "2"}, 2},
		{"a listed broker's logger", configKey{kmsg.ConfigResourceTypeBrokerLogger, "3"}, 3},
		{"the cluster-wide default", configKey{kmsg.ConfigResourceTypeBroker, ""}, anyNode},
		{"a broker not listed", configKey{kmsg.ConfigResourceTypeBroker, "9"}, anyNode},
		{"a negative id", configKey{kmsg.ConfigResourceTypeBroker, "-1"}, anyNode},
		{"not an id", configKey{kmsg.ConfigResourceTypeBroker, "two"}, anyNode},
		{"client metrics", configKey{kmsg.ConfigResourceTypeClientMetrics, "2"}, anyNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, configNode(tc.key, anyNode, listed), "%+v", tc.key)
		})
	}
}

// alterResource is an IncrementalAlterConfigs resource setting name.
func alterResource(typ kmsg.ConfigResourceType, name string) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "x", kmsg.StringPtr("1")
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
	return r
}

// spanning is an IncrementalAlterConfigs (validate_only, v1) of a topic,
// broker 2, a group and broker 3's logger, in that order.
func spanning() *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	req.ValidateOnly = true
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		alterResource(kmsg.ConfigResourceTypeTopic, "t"),
		alterResource(kmsg.ConfigResourceTypeBroker, "2"),
		alterResource(kmsg.ConfigResourceTypeGroupConfig, "g"),
		alterResource(kmsg.ConfigResourceTypeBrokerLogger, "3"),
		alterResource(kmsg.ConfigResourceTypeBroker, "2"),
	}
	return req
}

// keysOf lists the keys of a request's resources.
func keysOf(rs []kmsg.IncrementalAlterConfigsRequestResource) []configKey {
	var ks []configKey
	for _, r := range rs {
		ks = append(ks, incrementalAlterConfigs.key(r))
	}
	return ks
}

// TestConfigShards: a request spanning brokers is split a piece per
// broker, each a copy of the request (its version and validate_only)
// with its resources in request order; the client's request is left as
// it was.
func TestConfigShards(t *testing.T) {
	req := spanning()
	node := func(k configKey) int32 { return configNode(k, 1, func(id int32) bool { return id <= 3 }) }
	shards := incrementalAlterConfigs.shards(req, node)
	require.Len(t, shards, 3)
	topic, group := req.Resources[0], req.Resources[2]
	broker2, logger3 := req.Resources[1], req.Resources[3]
	for i, want := range []struct {
		node int32
		rs   []kmsg.IncrementalAlterConfigsRequestResource
	}{
		{1, []kmsg.IncrementalAlterConfigsRequestResource{topic, group}},
		{2, []kmsg.IncrementalAlterConfigsRequestResource{broker2, broker2}},
		{3, []kmsg.IncrementalAlterConfigsRequestResource{logger3}},
	} {
		assert.Equal(t, want.node, shards[i].node, "shard %d", i)
		sub := shards[i].req.(*kmsg.IncrementalAlterConfigsRequest)
		assert.Equal(t, keysOf(want.rs), keysOf(sub.Resources), "shard %d: its resources in request order", i)
		assert.Equal(t, int16(1), sub.GetVersion(), "the client's version")
		assert.True(t, sub.ValidateOnly, "the client's validate_only")
	}
	assert.Len(t, req.Resources, 5, "the client's request is left as it was")

	one := spanning()
	one.Resources = one.Resources[:1]
	shards = incrementalAlterConfigs.shards(one, node)
	require.Len(t, shards, 1, "all to one broker: one piece")
	assert.Equal(t, int32(1), shards[0].node)
}

// answer is an IncrementalAlterConfigs answer of resources keyed ks, each
// with code, throttled ms.
func answer(ms int32, code int16, ks ...configKey) *kmsg.IncrementalAlterConfigsResponse {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.ThrottleMillis = ms
	for _, k := range ks {
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName, r.ErrorCode = k.typ, k.name, code
		resp.Resources = append(resp.Resources, r)
	}
	return resp
}

// TestConfigMerge: the pieces' answers come back in request order,
// whatever order the pieces answered in, with the largest throttle, at
// the client's version; a resource listed twice takes its broker's
// answers in turn, and one that broker answered once (as Kafka answers a
// duplicate) is answered once.
func TestConfigMerge(t *testing.T) {
	req := spanning()
	ks := keysOf(req.Resources)
	done := []*shard{
		{node: 3, resp: answer(5, 0, ks[3])},
		{node: 2, resp: answer(0, kerr.InvalidRequest.Code, ks[1], ks[4])},
		{node: 1, resp: answer(20, 0, ks[2], ks[0])},
	}
	merged := incrementalAlterConfigs.merge(req, done).(*kmsg.IncrementalAlterConfigsResponse)
	assert.Equal(t, int16(1), merged.GetVersion())
	assert.Equal(t, int32(20), merged.ThrottleMillis, "the largest throttle")
	var got []configKey
	for _, r := range merged.Resources {
		got = append(got, incrementalAlterConfigs.answerKey(r))
	}
	assert.Equal(t, ks, got, "request order")
	assert.Equal(t, kerr.InvalidRequest.Code, merged.Resources[1].ErrorCode)
	assert.Equal(t, kerr.InvalidRequest.Code, merged.Resources[4].ErrorCode)

	done[1].resp = answer(0, kerr.InvalidRequest.Code, ks[1])
	merged = incrementalAlterConfigs.merge(req, done).(*kmsg.IncrementalAlterConfigsResponse)
	got = got[:0]
	for _, r := range merged.Resources {
		got = append(got, incrementalAlterConfigs.answerKey(r))
	}
	assert.Equal(t, []configKey{ks[0], ks[1], ks[2], ks[3]}, got, "the duplicate answered once, as upstream did")
}

// altersTopicA is User:alice allowed ALTER_CONFIGS on topic a and group
// g alone.
func altersTopicA(t *testing.T) authz.Access {
	t.Helper()
	a, err := acl.New()
	require.NoError(t, err)
	for _, b := range []struct {
		typ  kmsg.ACLResourceType
		name string
	}{{kmsg.ACLResourceTypeTopic, "a"}, {kmsg.ACLResourceTypeGroup, "g"}} {
		_, err = a.Add(acl.Binding{ResourceType: b.typ, ResourceName: b.name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:alice", Host: acl.Wildcard, Operation: kmsg.ACLOperationAlterConfigs, Permission: kmsg.ACLPermissionTypeAllow})
		require.NoError(t, err)
	}
	return authz.ForPrincipal(a, "User:alice", "127.0.0.1")
}

// TestAlterConfigsChecks: AlterConfigs and IncrementalAlterConfigs take
// out of the request what the client may not ALTER_CONFIGS, each with
// Kafka's code (a topic, the cluster for a broker or its logger, a
// group; an unknown resource type is INVALID_REQUEST); the rest is
// forwarded, and the denials join its answer. A request with nothing
// allowed is answered by the proxy alone.
func TestAlterConfigsChecks(t *testing.T) {
	const unknown kmsg.ConfigResourceType = 99
	keys := []configKey{
		{kmsg.ConfigResourceTypeTopic, "a"},
		{kmsg.ConfigResourceTypeTopic, "b"},
		{kmsg.ConfigResourceTypeBroker, "1"},
		{kmsg.ConfigResourceTypeBrokerLogger, "1"},
		{kmsg.ConfigResourceTypeGroupConfig, "g"},
		{kmsg.ConfigResourceTypeGroupConfig, "h"},
		{unknown, "x"},
	}
	denied := map[configKey]int16{
		keys[1]: kerr.TopicAuthorizationFailed.Code,
		keys[2]: kerr.ClusterAuthorizationFailed.Code,
		keys[3]: kerr.ClusterAuthorizationFailed.Code,
		keys[5]: kerr.GroupAuthorizationFailed.Code,
		keys[6]: kerr.InvalidRequest.Code,
	}
	allowed := []configKey{keys[0], keys[4]}

	t.Run("AlterConfigs", func(t *testing.T) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(2)
		for _, k := range keys {
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = k.typ, k.name
			req.Resources = append(req.Resources, r)
		}
		check := apis.Lookup(int16(kmsg.AlterConfigs)).Handler.check
		fwd, amend := check(nil, altersTopicA(t), req)
		require.NotNil(t, fwd)
		var sent []configKey
		for _, r := range fwd.(*kmsg.AlterConfigsRequest).Resources {
			sent = append(sent, alterConfigs.key(r))
		}
		assert.Equal(t, allowed, sent, "only what alice may alter is forwarded")
		assert.Len(t, req.Resources, len(keys), "the client's request is left as it was")
		resp := fwd.ResponseKind().(*kmsg.AlterConfigsResponse)
		require.NotNil(t, amend)
		amend(resp)
		require.Len(t, resp.Resources, len(denied))
		for _, r := range resp.Resources {
			k := alterConfigs.answerKey(r)
			assert.Equal(t, denied[k], r.ErrorCode, "%+v", k)
		}
	})

	t.Run("IncrementalAlterConfigs", func(t *testing.T) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		for _, k := range keys {
			req.Resources = append(req.Resources, alterResource(k.typ, k.name))
		}
		check := apis.Lookup(int16(kmsg.IncrementalAlterConfigs)).Handler.check
		fwd, amend := check(nil, altersTopicA(t), req)
		require.NotNil(t, fwd)
		assert.Equal(t, allowed, keysOf(fwd.(*kmsg.IncrementalAlterConfigsRequest).Resources))
		resp := fwd.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		amend(resp)
		require.Len(t, resp.Resources, len(denied))
		for _, r := range resp.Resources {
			k := incrementalAlterConfigs.answerKey(r)
			assert.Equal(t, denied[k], r.ErrorCode, "%+v", k)
		}

		only := kmsg.NewPtrIncrementalAlterConfigsRequest()
		only.Resources = req.Resources[1:2]
		fwd, amend = check(nil, altersTopicA(t), only)
		assert.Nil(t, fwd, "nothing allowed: answered by the proxy at once")
		resp = only.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		amend(resp)
		require.Len(t, resp.Resources, 1)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Resources[0].ErrorCode)

		known := kmsg.NewPtrIncrementalAlterConfigsRequest()
		known.Resources = req.Resources[:6]
		fwd, amend = check(nil, authz.Access{}, known)
		assert.Same(t, known, fwd, "no authorizer: the request as it is")
		assert.Nil(t, amend)
	})

	t.Run("DescribeConfigs", func(t *testing.T) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, name := range []string{"a", "b"} {
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
			req.Resources = append(req.Resources, r)
		}
		fwd, amend := apis.Lookup(int16(kmsg.DescribeConfigs)).Handler.check(nil, altersTopicA(t), req)
		require.NotNil(t, fwd)
		sent := fwd.(*kmsg.DescribeConfigsRequest).Resources
		require.Len(t, sent, 1, "ALTER_CONFIGS implies DESCRIBE_CONFIGS, on a alone")
		assert.Equal(t, "a", sent[0].ResourceName)
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		amend(resp)
		require.Len(t, resp.Resources, 1)
		assert.Equal(t, "b", resp.Resources[0].ResourceName)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Resources[0].ErrorCode)
	})
}
