package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeConfigs(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	rt := newTopic("own", 1, 1)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	created := c.RoundTrip(createTopicsRequest(5, rt)).(*kmsg.CreateTopicsResponse)
	require.Equal(t, int16(0), created.Topics[0].ErrorCode)

	resource := func(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
		return r
	}
	for _, v := range versions(0, 4) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		req.Resources = []kmsg.DescribeConfigsRequestResource{
			resource(kmsg.ConfigResourceTypeTopic, "own"),
			resource(kmsg.ConfigResourceTypeTopic, "missing"),
			resource(kmsg.ConfigResourceTypeBroker, "1", "num.partitions"),
			resource(kmsg.ConfigResourceTypeBroker, "2"),
			resource(kmsg.ConfigResourceType(16), "m"), // client metrics: not served
		}
		resp := c.RoundTrip(req).(*kmsg.DescribeConfigsResponse)
		require.Len(t, resp.Resources, 5, "v%d", v)

		own := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, cfg := range resp.Resources[0].Configs {
			own[cfg.Name] = cfg
		}
		require.Len(t, own, 14, "v%d", v)
		assert.Equal(t, "", *own["leader.replication.throttled.replicas"].Value, "none, Kafka's default")
		assert.Equal(t, "false", *own["unclean.leader.election.enable"].Value)
		assert.Equal(t, "delete", *own["cleanup.policy"].Value, "Kafka's default")
		assert.Equal(t, "0.5", *own["min.cleanable.dirty.ratio"].Value)
		assert.Equal(t, "86400000", *own["delete.retention.ms"].Value)
		assert.Equal(t, "2", *own["min.insync.replicas"].Value)
		assert.Equal(t, "604800000", *own["retention.ms"].Value)
		if v == 0 { // is_default is v0's; source replaces it
			assert.False(t, own["min.insync.replicas"].IsDefault)
			assert.True(t, own["retention.ms"].IsDefault)
		} else {
			assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, own["min.insync.replicas"].Source)
			assert.Equal(t, kmsg.ConfigSourceDefaultConfig, own["retention.ms"].Source)
		}

		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Resources[1].ErrorCode)
		broker := resp.Resources[2]
		require.Equal(t, int16(0), broker.ErrorCode)
		require.Len(t, broker.Configs, 1, "narrowed to the key asked for")
		assert.Equal(t, "num.partitions", broker.Configs[0].Name)
		assert.Equal(t, "1", *broker.Configs[0].Value)
		assert.True(t, broker.Configs[0].ReadOnly)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[3].ErrorCode, "another broker's resource")
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[4].ErrorCode, "not a topic, a broker or a group")
	}
}
