package test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterShareStateSurvivesLeaderFailover has a franz-go share
// consumer accept part of a topic's records and release the rest, then
// stops the partition's leader: a new consumer of the group, served by
// the new leader, which reads the share partition's state from the share
// coordinator (__share_group_state), gets every record the first did not
// accept, and none it did.
func TestClusterShareStateSurvivesLeaderFailover(t *testing.T) {
	const topic, group, records, accept = "share-fo", "share-fo-group", 100, 40
	c := startCluster(t, 3)
	admin := c.client()
	c.createTopic(admin, topic, 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range records {
		prod.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), func(_ *kgo.Record, err error) { assert.NoError(t, err) })
	}
	require.NoError(t, prod.Flush(ctx))

	// The group starts at offset 0: AlterShareGroupOffsets initializes
	// the share partition's state at the share coordinator, wherever the
	// partition's leader is.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
	require.Eventually(t, func() bool {
		resp, err := alter.RequestWith(ctx, admin)
		return err == nil && resp.ErrorCode == 0 && resp.Topics[0].Partitions[0].ErrorCode == 0
	}, 30*time.Second, 50*time.Millisecond, "the group's start offset is set")

	var (
		mu      sync.Mutex
		ackErrs []error
	)
	onAck := kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range res {
			if r.Err != nil {
				ackErrs = append(ackErrs, r.Err)
			}
		}
	})
	first := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond), onAck)
	accepted := make(map[int64]bool)
	for len(accepted) < accept {
		fs := first.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, r := range fs.Records() {
			if len(accepted) < accept && !accepted[r.Offset] {
				r.Ack(kgo.AckAccept)
				accepted[r.Offset] = true
				continue
			}
			r.Ack(kgo.AckRelease)
		}
	}
	// Every acknowledgement answered, so durable at the share coordinator.
	require.NoError(t, first.FlushAcks(ctx))
	mu.Lock()
	require.Empty(t, ackErrs, "every acknowledgement succeeded")
	mu.Unlock()
	first.Close()

	leader := c.replica(1, topic, 0).Leader
	t.Logf("stopping broker %d, the partition's leader, after %d records accepted", leader, len(accepted))
	c.stop(leader)

	second := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond), onAck)
	got := make(map[int64]bool)
	for len(got) < records-len(accepted) {
		fs := second.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%d of the %d records not accepted came back", len(got), records-len(accepted))
		for _, r := range fs.Records() {
			assert.False(t, accepted[r.Offset], "offset %d was accepted before the failover: not delivered again", r.Offset)
			got[r.Offset] = true
			r.Ack(kgo.AckAccept)
		}
	}
	for off := range int64(records) {
		assert.True(t, accepted[off] || got[off], "offset %d is not skipped", off)
	}
	require.NoError(t, second.FlushAcks(ctx))
}
