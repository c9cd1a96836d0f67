package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestAlterPartitionReassignments: a move of a partition of one replica
// is listed while it runs, completed by the AlterPartition that brings the
// new replica into the ISR, and listed no more; a cancel of a partition
// not being reassigned is refused alone, the rest of the request going
// on.
func TestAlterPartitionReassignments(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	top, err := c.CreateTopic(ctx, TopicSpec{Name: "b", Partitions: 3, ReplicationFactor: 1})
	require.NoError(t, err)
	p0 := metadata.PartitionRef{Topic: top.ID, Index: 0}
	p1 := metadata.PartitionRef{Topic: top.ID, Index: 1}
	require.Equal(t, []int32{1}, leaderOf(t, log, top.ID, 0).Replicas)

	results, err := c.AlterPartitionReassignments(ctx, []metadata.Reassignment{
		{Partition: p0, Target: []int32{3}}, {Partition: p1, Target: nil}}, true)
	require.NoError(t, err)
	assert.NoError(t, results[0])
	assert.ErrorIs(t, results[1], metadata.ErrNoReassignmentInProgress)

	listed, err := c.ListPartitionReassignments(nil)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, "b", listed[0].Topic)
	assert.Equal(t, int32(0), listed[0].Index)
	assert.Equal(t, []int32{3, 1}, listed[0].Partition.Replicas)
	assert.Equal(t, []int32{3}, listed[0].Partition.AddingReplicas)
	assert.Equal(t, []int32{1}, listed[0].Partition.RemovingReplicas)
	listed, err = c.ListPartitionReassignments([]metadata.PartitionRef{p1, {Topic: metadata.TopicID{9}, Index: 0}})
	require.NoError(t, err)
	assert.Empty(t, listed, "a partition not being reassigned, an unknown topic: left out")

	p := leaderOf(t, log, top.ID, 0)
	done, err := c.AlterPartition(ctx, top.ID, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 3})
	require.NoError(t, err)
	assert.Equal(t, []int32{3}, done.Replicas)
	assert.Equal(t, int32(3), done.Leader)
	listed, err = c.ListPartitionReassignments(nil)
	require.NoError(t, err)
	assert.Empty(t, listed, "completed")
}

// TestReassignmentsNeedTheActiveController: an inactive controller
// decides and lists nothing.
func TestReassignmentsNeedTheActiveController(t *testing.T) {
	c, _, _ := newActive(t)
	require.NoError(t, c.Close())
	_, err := c.AlterPartitionReassignments(context.Background(), nil, true)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = c.ListPartitionReassignments(nil)
	assert.ErrorIs(t, err, ErrClosed)
}
