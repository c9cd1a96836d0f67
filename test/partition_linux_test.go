package test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNetworkPartitionAcksAll: three broker binaries, each in a network
// namespace of the test's own (netnsCluster); the leader of partition 0
// of a topic with replication factor 3 and min.insync.replicas 2 is cut
// off from the other two brokers (its link to their network taken down)
// while its producer, an idempotent acks=all one, still reaches it on the
// clients' network. The cut-off leader can neither replicate nor shrink
// its ISR (that is the controller's, which it cannot reach), so it
// acknowledges nothing more; the controller fences it when its heartbeats
// stop, and elects a new leader from the ISR at a bumped epoch, which the
// producer goes on with. Then the network heals: the old leader learns
// from the metadata log that it no longer leads, truncates what it took
// alone, and rejoins the ISR as a follower; a preferred-leader election
// then makes it the leader again, and it acknowledges. Every acknowledged
// record is read back exactly once, at the offset it was acknowledged
// with.
func TestNetworkPartitionAcksAll(t *testing.T) {
	const topic, partitions = "partitioned", 3
	n := newNetnsCluster(t)
	c := n.startBrokers(faultArgs...)
	admin, prod, load, before := c.startLoad(topic, partitions)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch

	n.cut(leader)
	cut := time.Now()
	t.Logf("cut broker %d, the leader of partition 0 at epoch %d, off from the others (the active controller: %d)",
		leader, epoch, controllerID(t, admin, survivorOf(leader)))
	survivor := survivorOf(leader)
	p0 := c.awaitPartition0(admin, survivor, topic, 30*time.Second, "the others elect a new leader",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader >= 0 && p.Leader != leader })
	elected := time.Now()
	assert.Greater(t, p0.LeaderEpoch, epoch)
	assert.NotContains(t, p0.ISR, leader, "the cut-off broker is out of the ISR")
	require.Eventually(t, func() bool { return load.lastAck(0).After(elected) }, 30*time.Second, 5*time.Millisecond,
		"partition 0 acknowledges again, at the new leader")
	t.Logf("broker %d elected %v after the cut, at epoch %d; an acknowledgement on partition 0 %v after the cut",
		p0.Leader, elected.Sub(cut), p0.LeaderEpoch, load.lastAck(0).Sub(cut))

	n.heal(leader)
	healed := time.Now()
	require.Eventually(t, func() bool {
		after, ok := c.metadata(admin, survivor, topic)
		return ok && slices.Contains(after.Partitions[0].ISR, leader)
	}, 30*time.Second, 10*time.Millisecond, "the old leader rejoins the ISR as a follower")
	t.Logf("broker %d back in the ISR of partition 0 %v after the heal", leader, time.Since(healed))

	// It leads again once the metadata log says so: its session at the
	// controller is current again, and its image caught up.
	if before.Partitions[0].Replicas[0] == leader {
		c.eventually(func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := kadm.NewClient(admin).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
			if err != nil {
				return false
			}
			p, ok := c.metadata(admin, survivor, topic)
			return ok && p.Partitions[0].Leader == leader
		}, 30*time.Second, 200*time.Millisecond, "the preferred leader leads partition 0 again")
		back := time.Now()
		require.Eventually(t, func() bool { return load.lastAck(0).After(back) }, 30*time.Second, 5*time.Millisecond,
			"and acknowledges acks=all produces")
		t.Logf("broker %d leads partition 0 again and acknowledges", leader)
	}
	load.finish(t, c, prod, topic, partitions)
}

// survivorOf returns a broker other than id.
func survivorOf(id int32) int32 { return id%3 + 1 }

// TestNetworkPartitionAcksOne: as TestNetworkPartitionAcksAll, with an
// acks=1 producer and a consumer that know only the leader to be cut off
// (their seed), so that they may go on with it while it is cut off: it
// acknowledges acks=1 records it cannot replicate, which the new leader's
// log does not hold. It takes them only until its session at the
// controller lapses (broker.session.timeout.ms since its last heartbeat
// the controller answered), when it stops leading: the controller cannot
// have fenced it and elected another leader before that. When the network
// heals, the old leader truncates them. The loss is bounded: every record
// acknowledged before the cut is read back at its offset, only records
// acknowledged between the cut and the new leader's election may be
// missing. A consumer of the old leader reads only below its high
// watermark, which its unreachable followers no longer move, so it never
// sees what is lost; had it read any of it, franz-go would have to report
// the truncation (KIP-320's kgo.ErrDataLoss), which the test then
// requires.
func TestNetworkPartitionAcksOne(t *testing.T) {
	const topic, partitions = "partitioned1", 1
	n := newNetnsCluster(t)
	c := n.startBrokers(faultArgs...)
	admin := c.client()
	c.createTopic(admin, topic, partitions, map[string]string{"min.insync.replicas": "2"})
	before, ok := c.metadata(admin, 1, topic)
	require.True(t, ok)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch
	onlyLeader := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs[leader]), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	prod := onlyLeader(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(30*time.Second))
	consumer := onlyLeader(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	load := startFailoverLoad(prod, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	read := map[int64]string{}
	var lost []*kgo.ErrDataLoss
	poll := func(until func() bool, msg string) {
		t.Helper()
		for !until() {
			require.NoError(t, ctx.Err(), msg)
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := consumer.PollRecords(pctx, 1000)
			pcancel()
			fs.EachError(func(_ string, _ int32, err error) {
				if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
					lost = append(lost, dl)
				} else if !errors.Is(err, context.DeadlineExceeded) {
					t.Logf("a fetch error on the way (retried): %v", err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { read[r.Offset] = string(r.Value) })
		}
	}
	poll(func() bool { a, _ := load.acked(); return a >= 300 }, "the leader acknowledges")

	ackedBefore := load.ledger.snapshot()
	n.cut(leader)
	cut := time.Now()
	survivor := survivorOf(leader)
	p0 := c.awaitPartition0(admin, survivor, topic, 30*time.Second, "the others elect a new leader",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader >= 0 && p.Leader != leader })
	// What the cut-off leader acknowledged before its session lapsed,
	// which comes before the election: taken a moment after the election
	// is seen, since an acknowledgement reaches the ledger only once the
	// producer has read it and run its callback, which on a loaded machine
	// (CI, -race) came after the metadata poll saw the new leader. A
	// leader that went on taking records once its session had lapsed would
	// go on acknowledging for the whole cut, seconds past this.
	elected := time.Now()
	poll(func() bool { return time.Since(elected) > 300*time.Millisecond }, "the consumer reads on after the election")
	ackedAtElection := load.ledger.snapshot()
	t.Logf("cut broker %d off at epoch %d; broker %d elected %v later at epoch %d (the active controller now: %d)",
		leader, epoch, p0.Leader, time.Since(cut), p0.LeaderEpoch, controllerID(t, admin, survivor))
	poll(func() bool { return time.Since(cut) > 3*time.Second }, "the consumer reads on during the cut")

	n.heal(leader)
	require.Eventually(t, func() bool {
		after, ok := c.metadata(admin, survivor, topic)
		return ok && slices.Contains(after.Partitions[0].ISR, leader)
	}, 30*time.Second, 10*time.Millisecond, "the old leader rejoins the ISR as a follower")
	n0, _ := load.acked()
	poll(func() bool { m, _ := load.acked(); return m >= n0+300 }, "the producer goes on after the heal")
	close(load.stop)
	<-load.done
	require.NoError(t, prod.Flush(ctx))

	// The log as it is now, from a client that knows every broker.
	reader := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	final := map[int64]string{}
	seen := map[string]bool{}
	for _, r := range consumeTo(t, reader, endOffsets(t, reader, topic, partitions))[0] {
		require.False(t, seen[string(r.Value)], "record %.8s is there twice", r.Value)
		seen[string(r.Value)] = true
		final[r.Offset] = string(r.Value)
	}
	for v, o := range ackedBefore {
		require.Equal(t, v, final[o], "record %.8s, acknowledged before the cut, is read back at its offset", v)
	}
	missing := 0
	load.ledger.mu.Lock()
	for v, o := range load.ledger.acked {
		if final[o] == v {
			continue
		}
		_, early := ackedBefore[v]
		require.False(t, early, "record %.8s was acknowledged before the cut", v)
		_, beforeElection := ackedAtElection[v]
		require.True(t, beforeElection, "record %.8s, lost, was acknowledged after the new leader's election: "+
			"the cut-off leader went on taking records once its session had lapsed", v)
		missing++
	}
	acked := len(load.ledger.acked)
	load.ledger.mu.Unlock()
	diverged := 0
	for o, v := range read {
		if final[o] != v {
			diverged++
		}
	}
	t.Logf("%d acknowledged, %d of them lost with the old leader's truncation (all after the cut); the consumer read %d records the log no longer holds, %d data losses reported",
		acked, missing, diverged, len(lost))
	if diverged > 0 {
		require.NotEmpty(t, lost, "a consumer that read truncated records is told (KIP-320)")
	}
}
