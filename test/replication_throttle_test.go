package test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// The throttle tests' sizes: records of about a kilobyte, each its own
// batch, fetched at most throttleFetch bytes a partition at a time, so
// that the rate is reached a few batches at a time.
const (
	throttleRecord = 1000 // bytes of value: a batch is a little more
	throttleFetch  = 2048 // replica.fetch.max.bytes
	throttleRate   = 3000 // bytes per second
	throttleRecs   = 30   // records on the partition before it moves
	throttleWatch  = 2500 * time.Millisecond
)

// alterThrottle sets or deletes configs with IncrementalAlterConfigs, of
// topic or of broker (a topic "" means the broker; broker -1 the cluster
// default), and fails the test on any error.
func alterThrottle(t *testing.T, adm *kadm.Client, topic string, broker int32, configs ...kadm.AlterConfig) {
	t.Helper()
	var (
		rs  kadm.AlterConfigsResponses
		err error
	)
	switch {
	case topic != "":
		rs, err = adm.AlterTopicConfigs(testCtx(t), configs, topic)
	case broker < 0:
		rs, err = adm.AlterBrokerConfigs(testCtx(t), configs)
	default:
		rs, err = adm.AlterBrokerConfigs(testCtx(t), configs, broker)
	}
	require.NoError(t, err)
	for _, r := range rs {
		require.NoError(t, r.Err, r.ErrMessage)
	}
}

// describedAt waits until broker id describes resource's config name as
// value: it applied the change.
func describedAt(t *testing.T, cl *kgo.Client, id int32, typ kmsg.ConfigResourceType, resource, name, value string) {
	t.Helper()
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, resource, []string{name}
		req.Resources = append(req.Resources, rr)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
			return false
		}
		v := resp.Resources[0].Configs[0].Value
		return v != nil && *v == value
	}, 10*time.Second, 10*time.Millisecond, "broker %d has %s=%s", id, name, value)
}

// produceEach sends n records of throttleRecord bytes to topic's
// partition 0 with acks=all, one at a time, each its own batch.
func produceEach(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	value := make([]byte, throttleRecord)
	for range n {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Partition: 0, Value: value}).FirstErr())
	}
}

// watchThrottled watches broker 3's replica of topic's partition 0 for
// throttleWatch from since, when the throttle was set: its bytes never
// run ahead of the rate (the rate over the time since, at least the one
// window SimpleRate counts, plus the one fetch that takes it over), it is still not caught up, and the reassignment is
// still listed. A loaded machine only makes the bound looser: it is
// measured on the clock, never assumed.
func watchThrottled(t *testing.T, c *testCluster, adm *kadm.Client, topic string, since time.Time) {
	t.Helper()
	for time.Since(since) < throttleWatch {
		elapsed := time.Since(since)
		end := c.replica(3, topic, 0).LogEnd
		// Kafka's SimpleRate counts at least one window (1s) of time.
		allowed := (throttleRate*max(elapsed, time.Second).Seconds() + throttleFetch) / throttleRecord
		require.LessOrEqual(t, float64(end), allowed, "broker 3 has %d records %v after the throttle", end, elapsed)
		time.Sleep(20 * time.Millisecond) // polling only: the bound above decides
	}
	assert.Less(t, c.replica(3, topic, 0).LogEnd, int64(throttleRecs), "not caught up while throttled")
	listed, err := adm.ListPartitionReassignments(testCtx(t), kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	assert.Len(t, listed[topic], 1, "the reassignment is still in progress")
	assert.NotContains(t, c.replica(1, topic, 0).ISR, int32(3), "broker 3 is not in sync")
}

// TestReplicationThrottle moves a partition of [1 2] to [1 2 3] under a
// replication throttle (KIP-73), as kafka-reassign-partitions sets one:
// leader.replication.throttled.replicas naming the partition's current
// replicas with leader.replication.throttled.rate on its leader, or
// follower.replication.throttled.replicas naming the new replica with
// follower.replication.throttled.rate on its broker. The new replica
// catches up no faster than the rate, and the reassignment completes once
// the rate is removed. Under the leader's throttle, the in-sync follower
// (broker 2) is not throttled: acks=all produces, which wait for it, go
// through far faster than the rate would let them.
func TestReplicationThrottle(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.ReplicaFetchMaxBytes = throttleFetch })
	// Uncompressed: a batch's bytes on the wire are its value's.
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
	}
	del := func(name string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name} }
	for _, tc := range []struct {
		name         string
		list, listed string // the topic config, and its value
		rate         string
		broker       int32 // whose rate
		checkInSync  bool
	}{
		{name: "leader", list: "leader.replication.throttled.replicas", listed: "0:1,0:2",
			rate: "leader.replication.throttled.rate", broker: 1, checkInSync: true},
		{name: "follower", list: "follower.replication.throttled.replicas", listed: "0:3",
			rate: "follower.replication.throttled.rate", broker: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "throttled-" + tc.name
			c.createTopic(cl, topic, 1, 2, nil)
			require.Equal(t, []int32{1, 2}, c.replica(1, topic, 0).Replicas)
			produceEach(t, cl, topic, throttleRecs)

			since := time.Now()
			alterThrottle(t, adm, topic, 0, set(tc.list, tc.listed))
			alterThrottle(t, adm, "", tc.broker, set(tc.rate, "3000"))
			describedAt(t, cl, tc.broker, kmsg.ConfigResourceTypeTopic, topic, tc.list, tc.listed)
			describedAt(t, cl, tc.broker, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(tc.broker)), tc.rate, "3000")

			req := kadm.AlterPartitionAssignmentsReq{}
			req.Assign(topic, 0, []int32{1, 2, 3})
			res, err := adm.AlterPartitionAssignments(testCtx(t), req)
			require.NoError(t, err)
			require.NoError(t, res[topic][0].Err, res[topic][0].ErrMessage)
			watchThrottled(t, c, adm, topic, since)

			if tc.checkInSync {
				// Twenty kilobytes through the in-sync follower, which
				// the leader throttle lists: at the rate they would
				// take seven seconds.
				start := time.Now()
				produceEach(t, cl, topic, 20)
				took := time.Since(start)
				assert.Less(t, took, 5*time.Second, "the in-sync follower is not throttled")
				assert.True(t, slices.Contains(c.replica(1, topic, 0).ISR, 2), "broker 2 stays in sync")
				t.Logf("20 acks=all produces under the throttle took %v", took)
			}

			alterThrottle(t, adm, "", tc.broker, del(tc.rate))
			awaitReassigned(t, c, adm, topic, 0, []int32{1, 2, 3}, 1, 1, 2, 3)
			assert.Equal(t, c.replica(1, topic, 0).LogEnd, c.replica(3, topic, 0).LogEnd, "broker 3 caught up")
		})
	}
}
