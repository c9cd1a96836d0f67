package test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProxyForwardsConfigChanges: in front of three brokers, one
// IncrementalAlterConfigs through the proxy that names a topic, brokers 2
// and 3 and a share group's config is split: each broker resource reaches
// the broker it names (any other would refuse it: a broker changes only
// its own configs), the topic and the group any broker; the answers come
// back in request order. AlterConfigs goes through too.
func TestProxyForwardsConfigChanges(t *testing.T) {
	c := startCluster(t, 3)
	admin := proxyClient(t, startProxy(t, strings.Join(c.seeds(), ","))) // node 0, the proxy's default
	createTopic(t, admin, "cfgs", 1)
	direct := c.client()

	resource := func(typ kmsg.ConfigResourceType, name, config, value string) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = config, kmsg.StringPtr(value)
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{rc}
		return r
	}
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		resource(kmsg.ConfigResourceTypeBroker, "3", "log.retention.ms", "3333333"),
		resource(kmsg.ConfigResourceTypeTopic, "cfgs", "retention.ms", "1234567"),
		resource(kmsg.ConfigResourceTypeGroupConfig, "shared", "share.auto.offset.reset", "earliest"),
		resource(kmsg.ConfigResourceTypeBroker, "2", "log.retention.ms", "2222222"),
	}
	var resp *kmsg.IncrementalAlterConfigsResponse
	require.Eventually(t, func() bool { // every broker applies the topic from the metadata log
		var err error
		resp, err = inc.RequestWith(testCtx(t), admin.Broker(0))
		return err == nil && len(resp.Resources) == 4 && resp.Resources[1].ErrorCode != kerr.UnknownTopicOrPartition.Code
	}, 10*time.Second, 10*time.Millisecond)
	for i, r := range resp.Resources {
		assert.Equal(t, inc.Resources[i].ResourceType, r.ResourceType, "answer %d: in request order", i)
		assert.Equal(t, inc.Resources[i].ResourceName, r.ResourceName, "answer %d: in request order", i)
		assert.Zero(t, r.ErrorCode, "%s %s: %v", r.ResourceType, r.ResourceName, r.ErrorMessage)
	}
	for id, want := range map[int32]string{2: "2222222", 3: "3333333"} {
		require.Eventually(t, func() bool { return brokerConfigAt(t, direct, id, "log.retention.ms") == want },
			10*time.Second, 10*time.Millisecond, "broker %d's own log.retention.ms", id)
	}

	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "cfgs"
	ac := kmsg.NewAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "retention.ms", kmsg.StringPtr("7654321")
	ar.Configs = []kmsg.AlterConfigsRequestResourceConfig{ac}
	alter.Resources = []kmsg.AlterConfigsRequestResource{ar}
	altered, err := alter.RequestWith(testCtx(t), admin.Broker(0))
	require.NoError(t, err)
	require.Len(t, altered.Resources, 1)
	assert.Zero(t, altered.Resources[0].ErrorCode)
	require.Eventually(t, func() bool { return describeAt(t, direct, 1, "cfgs", "retention.ms") == "7654321" },
		10*time.Second, 10*time.Millisecond)
}

// brokerConfigAt returns broker id's value of its config name, asked of
// that broker; "" when it has none, or does not answer.
func brokerConfigAt(t *testing.T, cl *kgo.Client, id int32, name string) string {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)), []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 ||
		len(resp.Resources[0].Configs) != 1 || resp.Resources[0].Configs[0].Value == nil {
		return ""
	}
	return *resp.Resources[0].Configs[0].Value
}
