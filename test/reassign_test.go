package test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ackedLoad produces to topic's partition with acks=all, idempotently,
// until stopped, and keeps the offset of every record acknowledged.
type ackedLoad struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // guards the following
	acked map[string]int64
	sent  int
}

// startAckedLoad starts the load on a client of its own, batch by batch
// (ten records each), so that every batch is in flight on the leader
// while the reassignment moves it.
func startAckedLoad(t *testing.T, c *testCluster, topic string, partition int32) *ackedLoad {
	t.Helper()
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second))
	l := &ackedLoad{stop: make(chan struct{}), done: make(chan struct{}), acked: make(map[string]int64)}
	go func() {
		defer close(l.done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for n := 0; ; {
			select {
			case <-l.stop:
				return
			default:
			}
			recs := make([]*kgo.Record, 10)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "v%06d", n)}
				n++
			}
			results := cl.ProduceSync(ctx, recs...)
			l.mu.Lock()
			l.sent += len(recs)
			for _, r := range results {
				if r.Err == nil {
					l.acked[string(r.Record.Value)] = r.Record.Offset
				}
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(l.end)
	return l
}

// end stops the load and waits for its last batch. Idempotent.
func (l *ackedLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// ackedCount returns how many records were acknowledged so far.
func (l *ackedLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// readAll reads topic's partition from its start to its high watermark
// and returns each record's value by offset.
func readAll(t *testing.T, c *testCluster, topic string, partition int32) map[int64]string {
	t.Helper()
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	end, ok := ends.Lookup(topic, partition)
	require.True(t, ok)
	require.NoError(t, end.Err)
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	got := make(map[int64]string)
	for next := int64(0); next < end.Offset; {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(got), end.Offset)
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Offset] = string(r.Value)
			next = r.Offset + 1
		})
	}
	return got
}

// awaitReassigned waits until no reassignment of topic's partition is
// listed and the Metadata of every broker of up names replicas and
// leader for it.
func awaitReassigned(t *testing.T, c *testCluster, adm *kadm.Client, topic string, partition int32, replicas []int32, leader int32, up ...int32) {
	t.Helper()
	cl := c.client()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {partition: {}}})
		if err != nil || len(listed[topic]) > 0 {
			return false
		}
		for _, id := range up {
			for _, p := range topicMetadata(t, cl.Broker(int(id)), topic).Partitions {
				if p.Partition == partition && (p.Leader != leader || !assert.ObjectsAreEqual(replicas, p.Replicas)) {
					return false
				}
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "%s-%d moves to %v led by %d", topic, partition, replicas, leader)
}

// TestReassignUnderLoad moves a partition to other brokers with kadm's
// AlterPartitionAssignments while a producer writes to it with acks=all:
// the new replicas catch up, the leadership moves to the first of them,
// the broker left out drops its copy, and every acknowledged record is
// read back once, at the offset it was acknowledged at.
func TestReassignUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rf       int16
		from, to []int32
	}{
		{name: "rf1", rf: 1, from: []int32{1}, to: []int32{3}},
		{name: "rf2", rf: 2, from: []int32{1, 2}, to: []int32{3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, 3)
			cl := c.client()
			adm := kadm.NewClient(cl)
			topic := "move-" + tc.name
			c.createTopic(cl, topic, 1, tc.rf, nil)
			require.Equal(t, tc.from, c.replica(1, topic, 0).Replicas, "placed on the brokers it moves from")

			load := startAckedLoad(t, c, topic, 0)
			require.Eventually(t, func() bool { return load.ackedCount() >= 200 }, 20*time.Second, 10*time.Millisecond,
				"the load runs before the move")

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := kadm.AlterPartitionAssignmentsReq{}
			req.Assign(topic, 0, tc.to)
			res, err := adm.AlterPartitionAssignments(ctx, req)
			require.NoError(t, err)
			require.NoError(t, res[topic][0].Err, res[topic][0].ErrMessage)
			awaitReassigned(t, c, adm, topic, 0, tc.to, tc.to[0], 1, 2, 3)

			moved := load.ackedCount()
			require.Eventually(t, func() bool { return load.ackedCount() >= moved+200 }, 20*time.Second, 10*time.Millisecond,
				"the new leader takes the load")
			load.end()

			got := readAll(t, c, topic, 0)
			load.mu.Lock()
			defer load.mu.Unlock()
			for value, offset := range load.acked {
				assert.Equal(t, value, got[offset], "acknowledged at offset %d", offset)
			}
			seen := make(map[string]int64)
			for offset, value := range got {
				if at, dup := seen[value]; dup {
					t.Errorf("%s at offsets %d and %d", value, at, offset)
				}
				seen[value] = offset
			}
			t.Logf("%d records acknowledged of %d sent, %d read", len(load.acked), load.sent, len(got))
			require.Eventually(t, func() bool { return c.replica(1, topic, 0).LogEnd == 0 }, 10*time.Second, 10*time.Millisecond,
				"broker 1, left out, drops its copy")
		})
	}
}

// TestReassignListAndCancel: a reassignment that cannot complete (its new
// replica's broker is down) is listed, through any broker, with its adding
// and removing replicas (the request itself sent through a broker that
// forwards it to the controller); a cancel reverts it, and a second cancel is
// NO_REASSIGNMENT_IN_PROGRESS; invalid targets are refused per partition.
func TestReassignListAndCancel(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	adm := kadm.NewClient(cl)
	c.createTopic(cl, "stay", 1, 1, nil)
	c.createTopic(cl, "other", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctrl := c.activeController(cl)
	down := int32(3)
	if ctrl == down {
		down = 2 // keep the controller up; the partition is on broker 1
	}
	c.stop(down)

	// Through the broker that is neither the controller nor down: it
	// forwards the request to the controller.
	other := 6 - ctrl - down
	areq := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	areq.TimeoutMillis = 10000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "stay"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{down, 1}
	rt.Partitions = append(rt.Partitions, rp)
	areq.Topics = append(areq.Topics, rt)
	aresp, err := areq.RequestWith(ctx, cl.Broker(int(other)))
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(aresp.ErrorCode))
	require.NoError(t, kerr.ErrorForCode(aresp.Topics[0].Partitions[0].ErrorCode), "through broker %d (the controller is %d)", other, ctrl)

	for id := int32(1); id <= 3; id++ {
		if id == down {
			continue
		}
		lreq := kmsg.NewPtrListPartitionReassignmentsRequest()
		lreq.TimeoutMillis = 10000
		resp, err := lreq.RequestWith(ctx, cl.Broker(int(id)))
		require.NoError(t, err, "broker %d", id)
		require.NoError(t, kerr.ErrorForCode(resp.ErrorCode))
		require.Len(t, resp.Topics, 1, "broker %d (the controller is %d)", id, ctrl)
		p := resp.Topics[0].Partitions[0]
		assert.Equal(t, []int32{down, 1}, p.Replicas)
		assert.Equal(t, []int32{down}, p.AddingReplicas)
		assert.Empty(t, p.RemovingReplicas)
	}

	bad := kadm.AlterPartitionAssignmentsReq{}
	bad.Assign("stay", 0, []int32{1, 1})
	bad.Assign("stay", 7, []int32{1})
	bad.Assign("nosuch", 0, []int32{1})
	bad.Assign("other", 0, []int32{9})
	res, err := adm.AlterPartitionAssignments(ctx, bad)
	require.NoError(t, err)
	assert.ErrorIs(t, res["stay"][0].Err, kerr.InvalidReplicaAssignment)
	assert.ErrorIs(t, res["stay"][7].Err, kerr.UnknownTopicOrPartition)
	assert.ErrorIs(t, res["nosuch"][0].Err, kerr.UnknownTopicOrPartition)
	assert.ErrorIs(t, res["other"][0].Err, kerr.InvalidReplicaAssignment)
	assert.Equal(t, "The manual partition assignment includes broker 9, but no such broker is registered.", res["other"][0].ErrMessage)

	undo := kadm.AlterPartitionAssignmentsReq{}
	undo.CancelAssign("stay", 0)
	res, err = adm.AlterPartitionAssignments(ctx, undo)
	require.NoError(t, err)
	require.NoError(t, res["stay"][0].Err)
	awaitReassigned(t, c, adm, "stay", 0, []int32{1}, 1, 1, ctrl)
	res, err = adm.AlterPartitionAssignments(ctx, undo)
	require.NoError(t, err)
	assert.ErrorIs(t, res["stay"][0].Err, kerr.NoReassignmentInProgress)
}
