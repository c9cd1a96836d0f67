package test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// The offsets topic stays bounded: its leader rewrites a partition's live
// records once the dead ones outnumber them, and moves its log start past
// the dead; followers follow that log start.

// commitAll commits offset to each of topic's partitions for group
// (generation -1: no member), through cl, which finds the coordinator.
func commitAll(cl *kgo.Client, group, topic string, partitions int32, offset int64) error {
	return commitOffsets(cl, group, topic, sameOffset(partitions, offset), 10*time.Second)
}

// TestOffsetsTopicStaysBoundedOnEveryReplica: thousands of commits of the
// same offsets on three brokers leave each replica of the group's offsets
// partition holding a few records, and its log start far along; the
// coordinator stopped, the new one loads the compacted log and has every
// commit.
func TestOffsetsTopicStaysBoundedOnEveryReplica(t *testing.T) {
	const (
		topic      = "bounded"
		group      = "bounded-group"
		partitions = 4
		commits    = 3000
		deadMax    = 50
	)
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.OffsetsTopicPartitions = 3
		cfg.OffsetsCompactionDeadRecords = deadMax
	})
	cl := c.client(kgo.RetryTimeout(10 * time.Second))
	c.createTopic(cl, topic, partitions, 3, nil)

	for i := int64(1); i <= commits; i++ {
		require.NoError(t, commitAll(cl, group, topic, partitions, i), "commit %d", i)
	}
	idx := groupPartition(group, 3)
	// A commit is 5 records, 4 of them live: at most deadMax dead ones
	// before a rewrite, the rewrite, and the commits that come before
	// its log start moves.
	const bound = 4 + deadMax + 5 + 4 + 4*5
	require.Eventually(t, func() bool {
		for id := int32(1); id <= 3; id++ {
			ri := c.replica(id, "__consumer_offsets", idx)
			if ri.LogEnd-ri.LogStart > bound || ri.LogStart < commits {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every replica of the offsets partition is compacted")
	leader := c.replica(1, "__consumer_offsets", idx).Leader
	for id := int32(1); id <= 3; id++ {
		ri := c.replica(id, "__consumer_offsets", idx)
		t.Logf("broker %d (leader %d): log start %d, log end %d", id, leader, ri.LogStart, ri.LogEnd)
	}

	c.stop(leader)
	survivor := leader%3 + 1
	require.Eventually(t, func() bool {
		ri, err := c.broker(survivor).Replica("__consumer_offsets", idx)
		return err == nil && ri.Leader > 0 && ri.Leader != leader
	}, 10*time.Second, 5*time.Millisecond, "the offsets partition has a new leader")
	var committed map[int32]int64
	require.Eventually(t, func() bool {
		var err error
		committed, err = fetchGroupOffsets(cl, group, topic, partitions, time.Second)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the new coordinator answers OffsetFetch")
	for p := range int32(partitions) {
		assert.Equal(t, int64(commits), committed[p], "partition %d: the last commit survives compaction and the leader's loss", p)
	}
	require.NoError(t, commitAll(cl, group, topic, partitions, commits+1), "the new coordinator takes commits")
}

// offsetsBounds returns the log start and high watermark of the offsets
// partition idx, as its leader answers ListOffsets; ok is false on any
// error.
func offsetsBounds(cl *kgo.Client, idx int32) (start, hw int64, ok bool) {
	list := func(ts int64) (int64, bool) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "__consumer_offsets"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = idx, ts
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return 0, false
		}
		return resp.Topics[0].Partitions[0].Offset, true
	}
	start, ok1 := list(-2)
	hw, ok2 := list(-1)
	return start, hw, ok1 && ok2
}

// TestOffsetsCompactedThenCoordinatorKill9: on three broker processes
// with log.dirs (the offsets topic's segments rolled small, so that its
// log start moves by whole files), thousands of commits of the same
// offsets keep the group's offsets partition small; its coordinator
// killed with -9, the new one loads the compacted partition and has the
// last acknowledged commit.
func TestOffsetsCompactedThenCoordinatorKill9(t *testing.T) {
	const (
		topic      = "kill-bounded"
		group      = "kill-bounded-group"
		partitions = 4
		commits    = 3000
	)
	c := startProcessCluster(t, append([]string{"--offsets.topic.num.partitions", "3",
		"--offsets.topic.compaction.dead.records", "50", "--offsets.topic.segment.bytes", "4096"}, groupFailoverArgs...)...)
	admin := c.client()
	c.createTopic(admin, topic, partitions, nil)
	committer := c.client(kgo.RetryTimeout(10 * time.Second))
	for i := int64(1); i <= commits; i++ {
		require.NoError(t, commitAll(committer, group, topic, partitions, i), "commit %d", i)
	}
	idx := groupPartition(group, 3)
	var start, hw int64
	c.eventually(func() bool {
		var ok bool
		start, hw, ok = offsetsBounds(admin, idx)
		return ok && hw >= commits*4 && hw-start < 2000 // a commit is its 4 offsets
	}, 10*time.Second, 10*time.Millisecond, "the offsets partition is compacted")
	t.Logf("before the kill: log start %d, high watermark %d", start, hw)

	coordinator := c.findCoordinator(admin, 1, group)
	require.Greater(t, coordinator, int32(0))
	require.NoError(t, c.procs[coordinator].cmd.Process.Signal(syscall.SIGKILL))
	survivor := coordinator%3 + 1
	c.eventually(func() bool {
		next := c.findCoordinator(admin, survivor, group)
		return next > 0 && next != coordinator
	}, 30*time.Second, 10*time.Millisecond, "the group has a new coordinator")
	var committed map[int32]int64
	c.eventually(func() bool {
		var ok bool
		committed, ok = c.fetchCommitted(admin, c.findCoordinator(admin, survivor, group), group, topic, partitions)
		return ok
	}, 30*time.Second, 10*time.Millisecond, "the new coordinator answers OffsetFetch")
	for p := range int32(partitions) {
		assert.Equal(t, int64(commits), committed[p], "partition %d: the last acknowledged commit survives", p)
	}
	start, hw, ok := offsetsBounds(admin, idx)
	require.True(t, ok)
	t.Logf("after the kill: log start %d, high watermark %d", start, hw)
	assert.Less(t, hw-start, int64(2000), "the new leader's copy is compacted too")
}
