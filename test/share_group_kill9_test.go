package test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeShareAt describes share group at broker id
// (ShareGroupDescribe); ok is false on any error.
func describeShareAt(cl *kgo.Client, id int32, group string) (kmsg.ShareGroupDescribeResponseGroup, bool) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return kmsg.ShareGroupDescribeResponseGroup{}, false
	}
	return resp.Groups[0], true
}

// shareMembers returns each member's epoch and assignment, by member id.
func shareMembers(d kmsg.ShareGroupDescribeResponseGroup) map[string]string {
	out := make(map[string]string, len(d.Members))
	for _, m := range d.Members {
		var parts []string
		for _, tp := range m.Assignment.TopicPartitions {
			parts = append(parts, fmt.Sprintf("%s%v", tp.Topic, tp.Partitions))
		}
		out[m.MemberID] = fmt.Sprintf("epoch %d: %v", m.MemberEpoch, parts)
	}
	return out
}

// settledWith reports whether d has n members, each at the group's epoch.
func settledWith(d kmsg.ShareGroupDescribeResponseGroup, n int) bool {
	if len(d.Members) != n || d.AssignmentEpoch != d.GroupEpoch {
		return false
	}
	for _, m := range d.Members {
		if m.MemberEpoch != d.GroupEpoch {
			return false
		}
	}
	return true
}

// TestShareGroupSurvivesCoordinatorKill9: three franz-go share consumers
// (four joined, one left) read a topic (replication factor 3) of three broker binaries, each with
// its log dir, while a producer writes to it; the broker that coordinates
// the share group (the leader of its __consumer_offsets partition) is
// killed with SIGKILL. The group's records there bring it back at the
// partition's new leader as it was: ShareGroupDescribe shows the same
// members at the same epochs with the same assignments, at the same group
// epoch, so no member joined again as new (three members joining a
// coordinator that did not know them would make a group at epoch 3). The consumers go
// on: every record produced is delivered, and the group epoch still has
// not moved once they have.
func TestShareGroupSurvivesCoordinatorKill9(t *testing.T) {
	const (
		topic = "share-group-survives"
		group = "share-survives"
	)
	c := startProcessCluster(t, groupFailoverArgs...)
	admin := c.client()
	c.createTopic(admin, topic, 1, map[string]string{"min.insync.replicas": "2"})
	var coordinator int32
	c.eventually(func() bool { coordinator = c.findCoordinator(admin, 1, group); return coordinator > 0 },
		30*time.Second, 10*time.Millisecond, "the group has a coordinator")
	for id := int32(1); id <= 3; id++ {
		setShareGroupConfigs(t, c, admin, id, group, map[string]string{"share.auto.offset.reset": "earliest"})
	}

	load := startPacedLoad(c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())), topic)
	deliveries := newShareDeliveries()
	ctx, stopPolling := context.WithCancel(context.Background())
	var polling sync.WaitGroup
	defer polling.Wait()
	defer stopPolling()
	// Four consumers join; the fourth leaves (Close), so that the group
	// epoch (5) is not the one three members joining afresh would make.
	var fourth *kgo.Client
	stopFourth := func() {}
	for i := range 4 {
		cl := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.ClientID(fmt.Sprintf("member-%d", i)))
		pollCtx := ctx
		if i == 3 {
			fourth = cl
			pollCtx, stopFourth = context.WithCancel(ctx)
		}
		polling.Add(1)
		go func() {
			defer polling.Done()
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				deliveries.note(i, fs.Records())
				for _, r := range fs.Records() {
					r.Ack(kgo.AckAccept)
				}
			}
		}()
	}
	c.eventually(func() bool {
		d, ok := describeShareAt(admin, coordinator, group)
		return ok && settledWith(d, 4)
	}, 60*time.Second, 20*time.Millisecond, "four members at the group's epoch")
	stopFourth()
	fourth.Close() // leaves the group

	var before kmsg.ShareGroupDescribeResponseGroup
	c.eventually(func() bool {
		d, ok := describeShareAt(admin, coordinator, group)
		before = d
		return ok && settledWith(d, 3) && deliveries.count() >= 200
	}, 60*time.Second, 20*time.Millisecond, "three members at the group's epoch, consuming")
	require.Equal(t, int32(5), before.GroupEpoch, "four joins and a leave")
	consumed := deliveries.count()

	require.NoError(t, c.procs[coordinator].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed broker %d, the share group's coordinator, at group epoch %d, %d records delivered",
		coordinator, before.GroupEpoch, consumed)

	alive := coordinator%3 + 1
	var (
		after      kmsg.ShareGroupDescribeResponseGroup
		newCoordID int32
	)
	if !assert.Eventually(t, func() bool {
		if newCoordID = c.findCoordinator(admin, alive, group); newCoordID <= 0 || newCoordID == coordinator {
			return false
		}
		d, ok := describeShareAt(admin, newCoordID, group)
		after = d
		return ok && len(d.Members) == 3
	}, 30*time.Second, 50*time.Millisecond, "the group is at a new coordinator with its members") {
		t.Fatalf("before the kill: %+v\nafter: %+v", before, after)
	}
	t.Logf("after the kill: the group at broker %d after %v, at group epoch %d",
		newCoordID, time.Since(killed).Round(time.Millisecond), after.GroupEpoch)
	assert.Equal(t, before.GroupEpoch, after.GroupEpoch, "the same group epoch: nobody joined again as new")
	assert.Equal(t, before.AssignmentEpoch, after.AssignmentEpoch, "the same target assignment")
	assert.Equal(t, shareMembers(before), shareMembers(after), "the same members, at their epochs, with their partitions")

	c.eventually(func() bool { return deliveries.count() > consumed+100 }, 60*time.Second, 20*time.Millisecond,
		"the consumers go on after the kill")
	end := load.stopAndFlush(t)
	c.eventually(func() bool { return deliveries.covers(end) }, 60*time.Second, 20*time.Millisecond,
		"every record is delivered")
	final, ok := describeShareAt(admin, newCoordID, group)
	require.True(t, ok)
	assert.Equal(t, before.GroupEpoch, final.GroupEpoch, "still the same group epoch once the load is consumed")
	assert.Equal(t, shareMembers(before), shareMembers(final), "and the same members")
	t.Logf("%d records, %d deliveries", end, deliveries.total())
}
