package test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestClusterAcksAllWaitsForFollowers: on three brokers, an acks=all
// produce is answered only once both followers have the records (the
// high watermark is the smallest log end of the ISR), and the followers'
// long-poll fetches, which wait far longer than that, are completed by the
// leader's append rather than by their deadline. Consumers then read it
// all back from the leader.
func TestClusterAcksAllWaitsForFollowers(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.ReplicaFetchWaitMax = 10 * time.Second // a follower's fetch waits this long for data
	})
	// A first metadata answer taken while the topic was still being
	// applied would otherwise hold the first produce for kgo's
	// MetadataMinAge (5s), which is not what this test measures: once
	// (a loaded CI run), produce 0 took 5.015s.
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("replicated"),
		kgo.MetadataMinAge(100*time.Millisecond))
	c.createTopic(cl, "replicated", 1, 3, nil)
	ri := c.replica(1, "replicated", 0)
	require.Equal(t, []int32{1, 2, 3}, ri.Replicas)
	require.Equal(t, int32(1), ri.Leader)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 20 {
		start := time.Now()
		res := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%02d", i)})
		require.NoError(t, res.FirstErr())
		took := time.Since(start)
		want := res[0].Record.Offset + 1
		for _, id := range []int32{2, 3} {
			assert.GreaterOrEqual(t, c.replica(id, "replicated", 0).LogEnd, want,
				"follower %d has record %d when its produce is answered", id, i)
		}
		assert.GreaterOrEqual(t, c.replica(1, "replicated", 0).HighWatermark, want)
		// The followers' fetches were waiting (up to 10s) when the record
		// was appended: only the append completing them answers this fast.
		assert.Less(t, took, 5*time.Second, "produce %d", i)
	}
	assert.Equal(t, []int32{1, 2, 3}, c.metadataISR(cl, 2, "replicated", 0), "every broker tells clients the leader's ISR")

	consumer := c.client(kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 20 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		assert.Equal(t, fmt.Sprintf("r%02d", i), v)
	}
}

// TestClusterProduceToFollowerIsNotLeader: a produce or a consumer's fetch
// sent to a broker that does not lead the partition is answered
// NOT_LEADER_OR_FOLLOWER.
func TestClusterProduceToFollowerIsNotLeader(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	c.createTopic(cl, "placed", 3, 2, nil)
	for p := range int32(3) {
		ri := c.replica(1, "placed", p)
		leader := ri.Leader
		other := int32(1 + (int(leader) % 3)) // some broker that is not the leader
		code := c.produceTo(cl, other, "placed", p, "x")
		assert.Equal(t, kerr.NotLeaderForPartition.Code, code, "partition %d led by %d, produced to %d", p, leader, other)
	}
}

// TestClusterFollowerLeavesAndRejoinsISR: with a follower stopped, an
// acks=all produce waits in the leader's Produce purgatory until the
// follower leaves the ISR (replica.lag.time.max.ms), then completes with
// the two replicas left; a topic with min.insync.replicas=3 refuses acks=all
// with NOT_ENOUGH_REPLICAS. Started again, the follower catches up and
// rejoins, and the topic takes writes again.
func TestClusterFollowerLeavesAndRejoinsISR(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.ReplicaLagTimeMax = time.Second
		cfg.ReplicaFetchWaitMax = 100 * time.Millisecond
		// Broker 3 stops without telling the controller, as a crash
		// would: a controlled shutdown would take it out of the ISR
		// before the produce below.
		cfg.ControlledShutdown = false
	})
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("isr"))
	c.createTopic(cl, "isr", 1, 3, nil)
	// Two partitions: partition 1 is led by broker 2, which has the
	// topic's min.insync.replicas from the controller.
	c.createTopic(cl, "isr3", 2, 3, map[string]string{"min.insync.replicas": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())
	require.Equal(t, int16(0), c.produceTo(cl, 1, "isr3", 0, "all three"))

	c.stop(3)
	done := make(chan error, 1)
	cl.Produce(ctx, &kgo.Record{Value: []byte("while 3 is down")}, func(_ *kgo.Record, err error) { done <- err })
	require.Eventually(t, func() bool { return c.broker(1).PurgatorySizes()["Produce"].Pending == 1 },
		5*time.Second, time.Millisecond, "the produce waits in the leader's purgatory for broker 3")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the produce was not answered after broker 3 left the ISR")
	}
	require.Eventually(t, func() bool {
		return slices.Equal(c.metadataISR(cl, 1, "isr", 0), []int32{1, 2})
	}, 5*time.Second, 10*time.Millisecond, "broker 3 leaves the ISR, as Metadata shows")
	require.Eventually(t, func() bool {
		return slices.Equal(c.metadataISR(cl, 1, "isr3", 0), []int32{1, 2})
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, kerr.NotEnoughReplicas.Code, c.produceTo(cl, 1, "isr3", 0, "only two"))
	require.Eventually(t, func() bool {
		return slices.Equal(c.metadataISR(cl, 2, "isr3", 1), []int32{2, 1})
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, kerr.NotEnoughReplicas.Code, c.produceTo(cl, 2, "isr3", 1, "only two"),
		"broker 2 has the topic's min.insync.replicas from the metadata log")

	c.start(3)
	require.Eventually(t, func() bool {
		return slices.Equal(c.metadataISR(cl, 1, "isr", 0), []int32{1, 2, 3}) &&
			slices.Equal(c.metadataISR(cl, 1, "isr3", 0), []int32{1, 2, 3})
	}, 10*time.Second, 10*time.Millisecond, "broker 3 catches up and rejoins")
	assert.Equal(t, c.replica(1, "isr", 0).LogEnd, c.replica(3, "isr", 0).LogEnd, "broker 3 has every record again")
	assert.Equal(t, int16(0), c.produceTo(cl, 1, "isr3", 0, "three again"))
	require.Eventually(t, func() bool {
		return slices.Equal(c.metadataISR(cl, 2, "isr3", 1), []int32{2, 3, 1})
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, int16(0), c.produceTo(cl, 2, "isr3", 1, "three again"))
}

// TestClusterLeaderRestartedEmptyLosesLeadership: the leader of a
// partition, in memory, restarts empty. Its new registration (a new broker
// epoch) takes it out of the ISR and its leadership goes to the follower
// in sync, with the leader epoch bumped: nothing acknowledged is lost
// (a static leader used to come back empty and have its follower truncate
// to it). It then catches up as a follower and rejoins the ISR through an
// AlterPartition, and new records follow the old ones.
func TestClusterLeaderRestartedEmptyLosesLeadership(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c.createTopic(cl, "trunc", 2, 2, nil)
	before := c.replica(3, "trunc", 1)
	require.Equal(t, int32(2), before.Leader)
	require.Equal(t, []int32{2, 3}, before.Replicas)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 5 {
		r := &kgo.Record{Topic: "trunc", Partition: 1, Value: fmt.Appendf(nil, "old%d", i)}
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}
	require.Equal(t, int64(5), c.replica(3, "trunc", 1).LogEnd)

	c.stop(2)
	c.start(2)
	require.Eventually(t, func() bool {
		ri := c.replica(3, "trunc", 1)
		return ri.Leader == 3 && ri.LeaderEpoch > before.LeaderEpoch
	}, 10*time.Second, 10*time.Millisecond, "the follower in sync leads, at a new epoch")
	assert.Equal(t, int64(5), c.replica(3, "trunc", 1).LogEnd, "it kept every record")
	require.Eventually(t, func() bool {
		ri := c.replica(3, "trunc", 1)
		return slices.Equal(ri.ISR, []int32{2, 3}) && c.replica(2, "trunc", 1).LogEnd == 5
	}, 10*time.Second, 10*time.Millisecond, "broker 2 catches up and rejoins the ISR")

	r := &kgo.Record{Topic: "trunc", Partition: 1, Value: []byte("new")}
	require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	assert.Equal(t, int64(5), r.Offset, "after the records acknowledged before the restart")
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trunc": {1: kgo.NewOffset().AtStart()}}))
	got := consumeTo(t, consumer, map[int32]int64{1: 6})[1]
	require.Len(t, got, 6)
	for i, rec := range got[:5] {
		assert.Equal(t, fmt.Sprintf("old%d", i), string(rec.Value))
	}
	assert.Equal(t, "new", string(got[5].Value))
}

// TestClusterKill9Controller: broker 1 (coordinator of the groups,
// leader of partition 0, perhaps the active controller) runs in a child
// process with a log dir, and is killed with SIGKILL while an idempotent
// producer writes acks=all to three partitions led by brokers 1, 2 and 3.
// Started again on its directory, it registers at a new broker epoch,
// which takes it out of every ISR: partition 0 is led by a follower in
// sync, at a new leader epoch, and broker 1 truncates what it held past
// the new leader's log and catches up. Every partition holds each
// acknowledged record once, at its offset, in order, and a consumer group
// resumes from the offsets it committed before the kill.
func TestClusterKill9Controller(t *testing.T) {
	const topic, partitions = "kc", 3
	c := newTestCluster(t, 3)
	dir := t.TempDir()
	child, _ := startChild(t, dir, childClusterEnv+"="+c.cfgs[0].Cluster, childVotersEnv+"="+c.cfgs[0].ControllerQuorumVoters)
	c.start(2)
	c.start(3)
	admin := c.client()
	c.createTopic(admin, topic, partitions, 3, nil)
	commitSimple(t, admin, "kg", topic, map[int32]int64{0: 0, 1: 0, 2: 0})

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	// Before the kill, the group commits half of what each partition has
	// acknowledged: the acknowledgements are uneven across partitions (a
	// partition's acks=all waits on its own followers), so a fixed offset
	// could lie past a partition's end.
	committed := map[int32]int64{}
	acked := produceUntilKilled(t, prod, partitions, 300, func(l *ackLedger) {
		for p, end := range l.ackedEnds() {
			committed[p] = end / 2
		}
		commitSimple(t, admin, "kg", topic, committed)
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		_ = child.Wait()
	})
	t.Logf("killed broker 1 with %d of %d records acknowledged", len(acked.acked), acked.produced)

	startChild(t, dir, childClusterEnv+"="+c.cfgs[0].Cluster, childVotersEnv+"="+c.cfgs[0].ControllerQuorumVoters)
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond)) // leadership moves: look again soon
	// The replicas converge: brokers 2 and 3 catch up on broker 1's
	// partition 0, and broker 1 on theirs, whose high watermarks then
	// reach their log ends.
	for p := range int32(partitions) {
		require.Eventually(t, func() bool {
			ri2, ri3 := c.replica(2, topic, p), c.replica(3, topic, p)
			if ri2.LogEnd != ri3.LogEnd {
				return false
			}
			if p == 0 {
				ends, err := tryEndOffsets(cl, topic, partitions)
				return err == nil && ends[0] == ri2.LogEnd
			}
			leader := map[int32]server.ReplicaInfo{2: ri2, 3: ri3}[ri2.Leader]
			return leader.HighWatermark == leader.LogEnd
		}, 10*time.Second, 10*time.Millisecond, "the replicas of partition %d agree", p)
	}
	ends := endOffsets(t, cl, topic, partitions)
	total := acked.check(t, consumeTo(t, cl, ends))
	t.Logf("after the restart: %d records, %d of them acknowledged before the kill", total, len(acked.acked))

	require.Len(t, committed, partitions, "every partition had acknowledged records")
	for p, off := range committed {
		require.Less(t, off, ends[p], "partition %d has records after its committed offset", p)
	}
	group := c.client(kgo.ConsumeTopics(topic), kgo.ConsumerGroup("kg"), kgo.DisableAutoCommit())
	first := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(first) < partitions {
		fs := group.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	assert.Equal(t, committed, first, "the group resumes from its committed offsets")
}

// TestClusterGroupsAtTheirPartitionLeader: FindCoordinator, asked of any
// broker, names the leader of the group's partition of __consumer_offsets
// (Kafka's abs(hashCode) % 50); group requests sent to another broker are
// answered NOT_COORDINATOR, so a client finds the coordinator again.
func TestClusterGroupsAtTheirPartitionLeader(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var coordinator int32
	for id := int32(1); id <= 3; id++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g"} // before v4, from v4
		var fc *kmsg.FindCoordinatorResponse
		// COORDINATOR_NOT_AVAILABLE until the offsets topic the broker
		// asked the active controller for is here.
		require.Eventually(t, func() bool {
			resp, err := cl.Broker(int(id)).Request(ctx, req)
			require.NoError(t, err)
			fc = resp.(*kmsg.FindCoordinatorResponse)
			require.Len(t, fc.Coordinators, 1, "kgo speaks v4+")
			return fc.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code
		}, 5*time.Second, 20*time.Millisecond)
		require.NoError(t, kerr.ErrorForCode(fc.Coordinators[0].ErrorCode))
		if coordinator == 0 {
			coordinator = fc.Coordinators[0].NodeID
		}
		assert.Equal(t, coordinator, fc.Coordinators[0].NodeID, "broker %d names the same coordinator", id)
	}
	assert.Equal(t, c.replica(coordinator, "__consumer_offsets", groupPartition("g", 50)).Leader, coordinator,
		"the leader of the group's partition, %d", groupPartition("g", 50))
	other := coordinator%3 + 1

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis = "g", "consumer", 10_000
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	fetch := kmsg.NewPtrOffsetFetchRequest() // kgo sends v8+: groups
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}

	code := kerr.NotCoordinator.Code
	send := func(req kmsg.Request) kmsg.Response {
		resp, err := cl.Broker(int(other)).Request(ctx, req)
		require.NoError(t, err)
		return resp
	}
	assert.Equal(t, code, send(hb).(*kmsg.HeartbeatResponse).ErrorCode)
	assert.Equal(t, code, send(join).(*kmsg.JoinGroupResponse).ErrorCode)
	assert.Equal(t, code, send(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, code, send(fetch).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode)
	assert.Equal(t, code, send(describe).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode)
}

// TestClusterOffsetsTopicAtTheController: a Metadata request that names
// the offsets topic at a broker that is not the active controller does not
// create it there: it forwards the creation to the controller, with
// offsets.topic.num.partitions, and answers LEADER_NOT_AVAILABLE until the
// metadata log brings the topic, with the same id on every broker.
func TestClusterOffsetsTopicAtTheController(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	metadata := func(id int32) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("__consumer_offsets")
		req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), true
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		require.NoError(t, err)
		mr := resp.(*kmsg.MetadataResponse)
		require.Len(t, mr.Topics, 1)
		return mr
	}
	controller := c.activeController(cl)
	other := controller%3 + 1
	assert.Equal(t, kerr.LeaderNotAvailable.Code, metadata(other).Topics[0].ErrorCode, "created at the controller, not here")
	var at kmsg.MetadataResponseTopic
	require.Eventually(t, func() bool {
		at = metadata(controller).Topics[0]
		return at.ErrorCode == 0
	}, 5*time.Second, 20*time.Millisecond, "the controller has it")
	assert.Len(t, at.Partitions, int(c.cfgs[0].OffsetsTopicPartitions))
	for id := int32(1); id <= 3; id++ {
		require.Eventually(t, func() bool {
			got := metadata(id).Topics[0]
			return got.ErrorCode == 0 && got.TopicID == at.TopicID
		}, 5*time.Second, 20*time.Millisecond, "broker %d has the controller's topic", id)
	}
}

// TestClusterProducerIDsAreUnique: every broker hands out producer ids, and
// a producer's id must be its own on every partition whichever broker gave
// it: ids from different brokers never collide (two producers sharing one
// would have each other's batches taken for duplicates and dropped).
func TestClusterProducerIDsAreUnique(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := map[int64]int32{}
	for range 3 {
		for id := int32(1); id <= 3; id++ {
			resp, err := cl.Broker(int(id)).Request(ctx, kmsg.NewPtrInitProducerIDRequest())
			require.NoError(t, err)
			ir := resp.(*kmsg.InitProducerIDResponse)
			require.NoError(t, kerr.ErrorForCode(ir.ErrorCode))
			prev, dup := seen[ir.ProducerID]
			require.False(t, dup, "producer id %d from broker %d and from broker %d", ir.ProducerID, prev, id)
			seen[ir.ProducerID] = id
		}
	}
}

// TestClusterReplicaFetchMustBeCurrent: a Fetch that claims to come from a
// follower is served only for a broker registered and unfenced in the
// metadata log, at the broker epoch it gives (KIP-903). With broker 3
// stopped (and so fenced), a client posing as it is refused, and so is one
// posing as broker 2, which is alive, with another broker epoch, or at a
// version older than 15, which carries no broker epoch at all; acks=all
// on a topic with min.insync.replicas 3 stays refused with
// NOT_ENOUGH_REPLICAS rather than being acknowledged on the strength of a
// replica that is gone.
func TestClusterReplicaFetchMustBeCurrent(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	c.createTopic(cl, "spoof", 1, 3, map[string]string{"min.insync.replicas": "3"})
	require.Equal(t, int32(1), c.replica(1, "spoof", 0).Leader)
	id := topicID(t, cl, "spoof")
	c.stop(3)
	require.Eventually(t, func() bool { return slices.Equal(c.replica(1, "spoof", 0).ISR, []int32{1, 2}) },
		10*time.Second, 10*time.Millisecond, "the fenced broker leaves the ISR")

	// A Fetch older than v15 names its replica in ReplicaID alone.
	old := kversion.Stable()
	old.SetMaxKeyVersion(kmsg.Fetch.Int16(), 14)
	oldCl := c.client(kgo.MaxVersions(old))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, spoof := range []struct {
		id int32
		cl *kgo.Client
	}{{2, cl}, {3, cl}, {2, oldCl}, {3, oldCl}} {
		spoofed := spoof.id
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = spoofed
		req.ReplicaState.ID, req.ReplicaState.Epoch = spoofed, 1 // never a broker's epoch
		req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "spoof", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 1000, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, spoof.cl.Broker(1))
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, kerr.NotLeaderForPartition.Code, resp.Topics[0].Partitions[0].ErrorCode,
			"a fetch v%d posing as broker %d", resp.Version, spoofed)
	}
	assert.Equal(t, kerr.NotEnoughReplicas.Code, c.produceTo(cl, 1, "spoof", 0, "not acknowledged"))
	assert.Equal(t, []int32{1, 2}, c.replica(1, "spoof", 0).ISR)
}
