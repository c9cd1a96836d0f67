package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
)

// restartedBroker1 registers brokers 1 to 3, creates topic "a" (3
// partitions on all three), and restarts broker 1: partition 0, which it
// prefers, is led by broker 2 from then on. With caughtUp, broker 2 adds
// broker 1 back to partition 0's ISR.
func restartedBroker1(t *testing.T, c *Controller, log *metalog.Log, caughtUp bool) metadata.TopicID {
	t.Helper()
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	top, err := c.CreateTopic(context.Background(), TopicSpec{Name: "a", Partitions: 3, ReplicationFactor: 3})
	require.NoError(t, err)
	heartbeat(t, c, 1, 201)
	p0 := leaderOf(t, log, top.ID, 0)
	require.Equal(t, int32(2), p0.Leader)
	if caughtUp {
		_, err = c.AlterPartition(context.Background(), top.ID, 0, 2, p0.LeaderEpoch, p0.PartitionEpoch, []int32{1, 2, 3})
		require.NoError(t, err)
	}
	return top.ID
}

func leaderOf(t *testing.T, log *metalog.Log, topic metadata.TopicID, index int32) metadata.Partition {
	t.Helper()
	p, err := log.Image().Partition(topic, index)
	require.NoError(t, err)
	return p
}

func TestElectLeaders(t *testing.T) {
	c, log, _ := newActive(t)
	topic := restartedBroker1(t, c, log, false)
	ctx := context.Background()
	p0 := []metadata.PartitionRef{{Topic: topic, Index: 0}}

	_, results, err := c.ElectLeaders(ctx, metadata.ElectPreferred, p0)
	require.NoError(t, err)
	assert.ErrorIs(t, results[0], metadata.ErrPreferredLeaderNotAvailable, "broker 1 has not caught up")

	p := leaderOf(t, log, topic, 0)
	_, err = c.AlterPartition(ctx, topic, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
	require.NoError(t, err)
	parts, results, err := c.ElectLeaders(ctx, metadata.ElectPreferred, nil)
	require.NoError(t, err)
	assert.Equal(t, p0, parts, "all partitions: only those an election was tried for")
	assert.Equal(t, []error{nil}, results)
	assert.Equal(t, int32(1), leaderOf(t, log, topic, 0).Leader, "committed")

	_, results, err = c.ElectLeaders(ctx, metadata.ElectUnclean, p0)
	require.NoError(t, err)
	assert.ErrorIs(t, results[0], metadata.ErrElectionNotNeeded)

	c.LeaderChanged(2, false)
	_, _, err = c.ElectLeaders(ctx, metadata.ElectPreferred, p0)
	assert.ErrorIs(t, err, ErrNotController)
}

// TestAutoLeaderRebalance: every check interval the active controller
// gives broker 1 back the leadership it prefers, once it is in sync, and
// not before; an inactive controller checks nothing.
func TestAutoLeaderRebalance(t *testing.T) {
	const interval = 10 * time.Second
	c, log, clk := newActive(t, WithAutoLeaderRebalance(true, interval, 10))
	topic := restartedBroker1(t, c, log, false)
	aliveFor := func(d time.Duration) {
		for end := clk.Now() + d; clk.Now() < end; {
			advance(c, clk, time.Second)
			for id := int32(1); id <= 3; id++ {
				heartbeat(t, c, id, map[int32]int64{1: 201, 2: 102, 3: 103}[id])
			}
		}
	}
	aliveFor(interval)
	assert.Equal(t, int32(2), leaderOf(t, log, topic, 0).Leader, "out of the ISR: not moved")

	p := leaderOf(t, log, topic, 0)
	_, err := c.AlterPartition(context.Background(), topic, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
	require.NoError(t, err)
	aliveFor(interval - time.Second)
	assert.Equal(t, int32(2), leaderOf(t, log, topic, 0).Leader, "not before the next check")
	aliveFor(time.Second)
	p = leaderOf(t, log, topic, 0)
	assert.Equal(t, int32(1), p.Leader, "the check gave it back")

	// Moved away again, on a controller that is no longer active.
	heartbeat(t, c, 1, 301)
	require.Equal(t, int32(2), leaderOf(t, log, topic, 0).Leader)
	p = leaderOf(t, log, topic, 0)
	_, err = c.AlterPartition(context.Background(), topic, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
	require.NoError(t, err)
	c.LeaderChanged(2, false)
	clk.Advance(3 * interval)
	c.wg.Wait()
	assert.Equal(t, int32(2), leaderOf(t, log, topic, 0).Leader, "an inactive controller moves nothing")
}

// TestAutoLeaderRebalanceOff: with auto.leader.rebalance.enable false,
// nothing moves.
func TestAutoLeaderRebalanceOff(t *testing.T) {
	c, log, clk := newActive(t, WithAutoLeaderRebalance(false, time.Second, 10))
	topic := restartedBroker1(t, c, log, true)
	for range 5 {
		advance(c, clk, time.Second)
		heartbeat(t, c, 1, 201)
		heartbeat(t, c, 2, 102)
		heartbeat(t, c, 3, 103)
	}
	assert.Equal(t, int32(2), leaderOf(t, log, topic, 0).Leader)
}
