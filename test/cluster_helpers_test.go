package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// testCluster is a cluster of in-process brokers on loopback, each on a
// Kafka port and a quorum port of its own, which a stopped broker gets
// back when restarted.
type testCluster struct {
	t       testing.TB
	cfgs    []server.Config // by node id - 1
	brokers []*server.Server
	stops   []func()
}

// startCluster starts n brokers with ids 1 to n; tweak adjusts every
// broker's config.
func startCluster(t testing.TB, n int, tweak ...func(*server.Config)) *testCluster {
	t.Helper()
	c := newTestCluster(t, n, tweak...)
	for id := range int32(n) {
		c.start(id + 1)
	}
	return c
}

// clusterTimings makes a test cluster quick: a follower retries soon, the
// quorum elects within a few hundred milliseconds, and a broker that stops
// heartbeating is fenced within 2s (loose enough for -race on a loaded
// machine: a live broker is never fenced by a slow heartbeat).
func clusterTimings(cfg *server.Config) {
	cfg.ReplicaFetchBackoff = 20 * time.Millisecond
	cfg.GroupInitialRebalance = 50 * time.Millisecond
	cfg.ControllerElectionTimeout = 300 * time.Millisecond
	cfg.BrokerHeartbeatInterval = 200 * time.Millisecond
	cfg.BrokerSessionTimeout = 2 * time.Second
}

// newTestCluster configures n brokers on free loopback ports and starts
// none.
func newTestCluster(t testing.TB, n int, tweak ...func(*server.Config)) *testCluster {
	t.Helper()
	addrs := make([]string, n)
	spec := make([]string, n)
	voters := make([]string, n)
	for i := range addrs {
		addrs[i] = freePort(t)
		spec[i] = fmt.Sprintf("%d@%s", i+1, addrs[i])
		voters[i] = fmt.Sprintf("%d@%s", i+1, freePort(t))
	}
	c := &testCluster{t: t, cfgs: make([]server.Config, n), brokers: make([]*server.Server, n), stops: make([]func(), n)}
	for i := range addrs {
		cfg := server.Default()
		cfg.NodeID = int32(i + 1)
		cfg.Listener = addrs[i]
		cfg.Cluster = strings.Join(spec, ",")
		cfg.ControllerQuorumVoters = strings.Join(voters, ",")
		clusterTimings(&cfg)
		for _, f := range tweak {
			f(&cfg)
		}
		c.cfgs[i] = cfg
	}
	return c
}

// start starts broker id (again).
func (c *testCluster) start(id int32) {
	c.t.Helper()
	c.brokers[id-1], c.stops[id-1] = runBroker(c.t, c.cfgs[id-1])
}

// stop stops broker id gracefully.
func (c *testCluster) stop(id int32) { c.stops[id-1]() }

func (c *testCluster) broker(id int32) *server.Server { return c.brokers[id-1] }

// seeds lists every broker's address.
func (c *testCluster) seeds() []string {
	var out []string
	for _, cfg := range c.cfgs {
		out = append(out, cfg.Listener)
	}
	return out
}

// client returns a kgo client seeded with every broker, closed at the end
// of the test.
func (c *testCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, opts...)...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic through cl (kgo sends it to the controller)
// and waits until every running broker has it, each partition's leader
// known.
func (c *testCluster) createTopic(cl *kgo.Client, topic string, partitions int32, rf int16, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(c.t, err)
	require.NoError(c.t, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	require.Eventually(c.t, func() bool {
		for i, b := range c.brokers {
			if b == nil {
				// Not in this process (a child, or stopped): its
				// Metadata answer says whether it has applied the topic.
				if !c.hasTopic(cl, int32(i+1), topic) {
					return false
				}
				continue
			}
			// The partition's log exists before the broker's image
			// names its leader: wait for the leader, so that a test
			// reading it and producing there finds it leading.
			for p := range partitions {
				if ri, err := b.Replica(topic, p); err != nil || ri.Leader <= 0 {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every broker has %s", topic)
}

// hasTopic reports whether broker id's Metadata lists topic, or the
// broker does not answer (it is stopped).
func (c *testCluster) hasTopic(cl *kgo.Client, id int32, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return true
	}
	return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
}

// activeController waits until the brokers agree on an active controller
// and returns its id.
func (c *testCluster) activeController(cl *kgo.Client) int32 {
	c.t.Helper()
	var id int32
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil || resp.ControllerID < 0 {
			return false
		}
		id = resp.ControllerID
		return c.broker(id) != nil && c.broker(id).IsController()
	}, 10*time.Second, 10*time.Millisecond, "a controller is elected")
	return id
}

// replica returns what broker id holds of topic's partition.
func (c *testCluster) replica(id int32, topic string, partition int32) server.ReplicaInfo {
	c.t.Helper()
	ri, err := c.broker(id).Replica(topic, partition)
	require.NoError(c.t, err)
	return ri
}

// metadataISR returns partition's ISR as broker id's Metadata answer gives
// it to a client.
func (c *testCluster) metadataISR(cl *kgo.Client, id int32, topic string, partition int32) []int32 {
	c.t.Helper()
	for _, p := range topicMetadata(c.t, cl.Broker(int(id)), topic).Partitions {
		if p.Partition == partition {
			return p.ISR
		}
	}
	c.t.Fatalf("%s has no partition %d", topic, partition)
	return nil
}

// produceTo sends one record with acks=all to topic's partition at broker
// id, whether or not it leads it, and returns the partition's error code.
func (c *testCluster) produceTo(cl *kgo.Client, id int32, topic string, partition int32, value string) int16 {
	c.t.Helper()
	return produceBatch(c.t, cl.Broker(int(id)), topicID(c.t, cl, topic), topic, partition, idempotentBatch(-1, -1, value)).ErrorCode
}
