package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestShareGroupDeliversEveryRecord has three franz-go share consumers of
// one group (KIP-932) read 300 records from three partitions: each record
// is accepted, every tenth, released on its first delivery, comes back
// with a delivery count of 2, the group lists its three members while
// they consume, and once they close it is empty and no share fetch waits.
func TestShareGroupDeliversEveryRecord(t *testing.T) {
	const records, topic, group = 300, "share-e2e", "share-e2e-group"
	srv := startBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The group starts at the log start, so that records produced before
	// the consumers join are theirs (share.auto.offset.reset is latest by
	// default).
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	altered, err := alter.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, altered.Resources[0].ErrorCode)

	producer := newClient(t, srv, kgo.DefaultProduceTopic(topic))
	for i := range records {
		producer.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), func(_ *kgo.Record, err error) { assert.NoError(t, err) })
	}
	require.NoError(t, producer.Flush(ctx))

	var (
		mu         sync.Mutex
		accepted   = make(map[string]int)
		redelivery = make(map[string]int32) // released values: their delivery count when accepted
	)
	// Polls end when the test has what it needs: PollFetches waits for
	// its context, which this cancels.
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	var wg sync.WaitGroup
	var consumers []*kgo.Client
	for range 3 {
		cl := newClient(t, srv, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
		consumers = append(consumers, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				for _, r := range fs.Records() {
					v := string(r.Value)
					n, _ := strconv.Atoi(v)
					if n%10 == 0 && r.DeliveryCount() == 1 {
						r.Ack(kgo.AckRelease) // given back: another delivery follows
						continue
					}
					r.Ack(kgo.AckAccept)
					mu.Lock()
					accepted[v]++
					if n%10 == 0 && r.DeliveryCount() > 1 {
						redelivery[v] = r.DeliveryCount()
					}
					mu.Unlock()
				}
			}
		}()
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == records
	}, 50*time.Second, 10*time.Millisecond, "every record accepted")

	// The records may all be read before the last consumer joins: the
	// group is described once it has its three members.
	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs = []string{group}
	var g kmsg.ShareGroupDescribeResponseGroup
	eventually(t, func() bool {
		d, err := describe.RequestWith(ctx, admin)
		if err != nil || len(d.Groups) != 1 {
			return false
		}
		g = d.Groups[0]
		return len(g.Members) == 3
	}, "three members")
	assert.Zero(t, g.ErrorCode)
	assert.Equal(t, "Stable", g.GroupState)
	for _, m := range g.Members {
		assert.NotEmpty(t, m.Assignment.TopicPartitions, "every member is assigned a partition: %+v", g)
	}
	stopPolling()
	wg.Wait()

	// Closing, each consumer leaves the group (member epoch -1) and closes
	// its share session: the group is empty, and no share fetch of theirs
	// is left waiting or watched.
	for _, cl := range consumers {
		cl.Close()
	}
	eventually(t, func() bool {
		d, err := describe.RequestWith(ctx, admin)
		return err == nil && len(d.Groups) == 1 && d.Groups[0].GroupState == "Empty"
	}, "the consumers left the group")
	eventually(t, func() bool { return srv.PurgatorySizes()["ShareFetch"] == server.PurgatorySize{} },
		"no share fetch left in the purgatory")

	mu.Lock()
	defer mu.Unlock()
	for i := range records {
		v := strconv.Itoa(i)
		assert.GreaterOrEqual(t, accepted[v], 1, "record %s accepted", v)
	}
	assert.Len(t, redelivery, records/10, "every released record came back")
	for v, dc := range redelivery {
		assert.GreaterOrEqual(t, dc, int32(2), fmt.Sprintf("released record %s delivered again", v))
	}
}
