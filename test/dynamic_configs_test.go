package test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDynamicBrokerConfigsCluster: on three brokers, a cluster-wide
// default of message.max.bytes set through a broker that is not the
// controller (it forwards it) is in the metadata log: each broker
// describes it, with kadm, as DYNAMIC_DEFAULT_BROKER_CONFIG on its own
// broker resource, and applies it, refusing a larger batch at every
// partition's leader; a broker's own value then wins on that broker
// alone, and deleting both gives the static setting back everywhere.
func TestDynamicBrokerConfigsCluster(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	adm := kadm.NewClient(cl)
	c.createTopic(cl, "dyn", 3, 3, nil) // partition p led by broker p+1
	big := strings.Repeat("x", 2000)
	brokerConfig := func(id int32, name string) kadm.Config {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(testCtx(t), id)
		require.NoError(t, err)
		rc, err := rcs.On(strconv.Itoa(int(id)), nil)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		for _, cfg := range rc.Configs {
			if cfg.Key == name {
				return cfg
			}
		}
		t.Fatalf("broker %d has no config %s", id, name)
		return kadm.Config{}
	}
	everyBroker := func(value string) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			require.Eventually(t, func() bool { return describeAt(t, cl, id, "dyn", "max.message.bytes") == value },
				10*time.Second, 5*time.Millisecond, "broker %d applies message.max.bytes=%s", id, value)
		}
	}

	other := c.activeController(cl)%3 + 1
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "" // the cluster-wide default
	op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	op.Name, op.Op, op.Value = "message.max.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1000")
	rr.Configs = append(rr.Configs, op)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(other)))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	require.Zero(t, resp.Resources[0].ErrorCode, "forwarded to the controller: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))

	everyBroker("1000")
	for id := int32(1); id <= 3; id++ {
		cfg := brokerConfig(id, "message.max.bytes")
		assert.Equal(t, "1000", *cfg.Value, "broker %d", id)
		assert.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, cfg.Source, "broker %d", id)
	}
	for p := int32(0); p < 3; p++ {
		leader := c.replica(1, "dyn", p).Leader
		assert.Equal(t, kerr.MessageTooLarge.Code, c.produceTo(cl, leader, "dyn", p, big), "partition %d at broker %d", p, leader)
	}

	// Broker 3's own value wins there, and there alone.
	rs, err := adm.AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{setConfig("message.max.bytes", "1000000")}, 3)
	requireAltered(t, rs, err)
	require.Eventually(t, func() bool { return describeAt(t, cl, 3, "dyn", "max.message.bytes") == "1000000" },
		10*time.Second, 5*time.Millisecond)
	assert.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, brokerConfig(3, "message.max.bytes").Source)
	assert.Equal(t, "1000", describeAt(t, cl, 1, "dyn", "max.message.bytes"), "broker 1 keeps the default")
	assert.Zero(t, c.produceTo(cl, 3, "dyn", 2, big), "broker 3 leads partition 2")

	rs, err = adm.AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}, 3)
	requireAltered(t, rs, err)
	rs, err = adm.AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}})
	requireAltered(t, rs, err)
	everyBroker(strconv.Itoa(int(c.cfgs[0].MessageMaxBytes))) // the flag's
	for id := int32(1); id <= 3; id++ {
		assert.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, brokerConfig(id, "message.max.bytes").Source, "broker %d", id)
	}
	for p := int32(0); p < 3; p++ {
		leader := c.replica(1, "dyn", p).Leader
		assert.Zero(t, c.produceTo(cl, leader, "dyn", p, big), "partition %d at broker %d", p, leader)
	}
}
