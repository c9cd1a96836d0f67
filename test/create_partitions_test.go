package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requireGrown checks every topic of a kadm CreatePartitions answer
// succeeded.
func requireGrown(t *testing.T, rs kadm.CreatePartitionsResponses, err error) {
	t.Helper()
	require.NoError(t, err)
	for _, r := range rs.Sorted() {
		require.NoError(t, r.Err, "%s: %s", r.Topic, r.ErrMessage)
	}
}

// partitionCount is topic's partition count in cl's Metadata answer.
func partitionCount(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	td, err := adm.ListTopics(testCtx(t), topic)
	require.NoError(t, err)
	require.NoError(t, td[topic].Err)
	return len(td[topic].Partitions)
}

// produceToPartition writes values to topic's partition with acks=all,
// through a client that places each record where it says.
func produceToPartition(t *testing.T, seeds []string, topic string, partition int32, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer cl.Close()
	for _, v := range values {
		r := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
		require.NoError(t, r.FirstErr())
	}
}

// consumePartition reads n records from the start of topic's partition
// and returns their values.
func consumePartition(t *testing.T, seeds []string, topic string, partition int32, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	var values []string
	for len(values) < n {
		fs := cl.PollFetches(testCtx(t))
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) {
			assert.Equal(t, partition, r.Partition)
			values = append(values, string(r.Value))
		})
	}
	return values
}

// TestCreatePartitionsOneBroker grows a topic of a broker alone with
// kadm, produces to a new partition and reads it back; a shrink is
// refused with Kafka's message, validate_only grows nothing.
func TestCreatePartitionsOneBroker(t *testing.T) {
	srv := startBroker(t)
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	seeds := []string{srv.Addr().String()}
	createTopic(t, cl, "grow", 1)

	rs, err := adm.ValidateCreatePartitions(testCtx(t), 2, "grow")
	requireGrown(t, rs, err)
	assert.Equal(t, 1, partitionCount(t, adm, "grow"), "validate_only grows nothing")

	rs, err = adm.CreatePartitions(testCtx(t), 2, "grow")
	requireGrown(t, rs, err)
	assert.Equal(t, 3, partitionCount(t, adm, "grow"))
	rs, err = adm.UpdatePartitions(testCtx(t), 4, "grow")
	requireGrown(t, rs, err)
	assert.Equal(t, 4, partitionCount(t, adm, "grow"))

	rs, err = adm.UpdatePartitions(testCtx(t), 2, "grow")
	require.NoError(t, err)
	assert.ErrorIs(t, rs["grow"].Err, kerr.InvalidPartitions)
	assert.Equal(t, "The topic grow currently has 4 partition(s); 2 would not be an increase.", rs["grow"].ErrMessage)

	produceToPartition(t, seeds, "grow", 3, "a", "b")
	assert.Equal(t, []string{"a", "b"}, consumePartition(t, seeds, "grow", 3, 2))
}

// TestCreatePartitionsSurvivesRestart: with log.dirs, a restarted broker
// alone has the grown topic, with the records of its old and new
// partitions.
func TestCreatePartitionsSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	srv, stop := runBroker(t, durableConfig(dir))
	cl := newClient(t, srv)
	createTopic(t, cl, "grow", 1)
	seeds := []string{srv.Addr().String()}
	produceToPartition(t, seeds, "grow", 0, "old")
	rs, err := kadm.NewClient(cl).UpdatePartitions(testCtx(t), 3, "grow")
	requireGrown(t, rs, err)
	produceToPartition(t, seeds, "grow", 2, "new")
	cl.Close()
	stop()

	srv, _ = runBroker(t, durableConfig(dir))
	adm := kadm.NewClient(newClient(t, srv))
	assert.Equal(t, 3, partitionCount(t, adm, "grow"), "the count survives")
	seeds = []string{srv.Addr().String()}
	assert.Equal(t, []string{"old"}, consumePartition(t, seeds, "grow", 0, 1))
	assert.Equal(t, []string{"new"}, consumePartition(t, seeds, "grow", 2, 1))
	produceToPartition(t, seeds, "grow", 1, "after")
	assert.Equal(t, []string{"after"}, consumePartition(t, seeds, "grow", 1, 1))
}

// TestCreatePartitionsCluster grows a replicated topic of three brokers:
// every broker has the new partitions, placed as a new topic's would be,
// an acks=all produce to one is replicated and read back, a broker that
// is not the controller forwards the request to it, and a producer
// that was already producing with kgo's default partitioner spreads its
// keys over the new partitions after a metadata refresh.
func TestCreatePartitionsCluster(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	c.createTopic(cl, "grow", 1, 3, nil)
	producer := c.client(kgo.MetadataMinAge(10 * time.Millisecond))
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	produceKeys := func() map[int32]bool {
		used := make(map[int32]bool)
		for _, k := range keys {
			r, err := producer.ProduceSync(testCtx(t), &kgo.Record{Topic: "grow", Key: []byte(k), Value: []byte(k)}).First()
			require.NoError(t, err)
			used[r.Partition] = true
		}
		return used
	}
	assert.Equal(t, map[int32]bool{0: true}, produceKeys(), "one partition: every key on it")

	// kadm sends it to the controller.
	rs, err := kadm.NewClient(cl).UpdatePartitions(testCtx(t), 4, "grow")
	requireGrown(t, rs, err)
	everyBrokerHas := func(partition int32) {
		t.Helper()
		require.Eventually(t, func() bool {
			for id := int32(1); id <= 3; id++ {
				if _, err := c.broker(id).Replica("grow", partition); err != nil {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond, "every broker applies the growth to %d", partition+1)
	}
	everyBrokerHas(3)
	for p := int32(1); p < 4; p++ {
		ri := c.replica(1, "grow", p)
		assert.Equal(t, []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}, ri.Replicas, "partition %d placed as a new topic's", p)
	}

	seeds := c.seeds()
	produceToPartition(t, seeds, "grow", 2, "x", "y")
	assert.Equal(t, []string{"x", "y"}, consumePartition(t, seeds, "grow", 2, 2))
	require.Eventually(t, func() bool {
		for id := int32(1); id <= 3; id++ {
			if c.replica(id, "grow", 2).LogEnd != 2 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the followers of the new partition replicate it")

	// Another broker forwards what passes its own checks to the
	// controller, and answers the rest itself.
	other := c.activeController(cl)%3 + 1
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	for _, g := range []struct {
		topic string
		count int32
	}{{"grow", 5}, {"dup", 2}, {"dup", 3}} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = g.topic, g.count
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(other)))
	require.NoError(t, err)
	codes := map[string]int16{}
	for _, st := range resp.Topics {
		codes[st.Topic] = st.ErrorCode
	}
	assert.Equal(t, map[string]int16{"grow": 0, "dup": kerr.InvalidRequest.Code}, codes)
	assert.Len(t, resp.Topics, 2)
	everyBrokerHas(4)

	producer.ForceMetadataRefresh()
	var used map[int32]bool
	require.Eventually(t, func() bool {
		used = produceKeys()
		return len(used) > 1
	}, 10*time.Second, 20*time.Millisecond, "the producer spreads its keys over the new partitions")
	for p := range used {
		assert.Less(t, p, int32(5))
	}
}
