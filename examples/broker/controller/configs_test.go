package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestAlterConfigsTopics: the topics that pass get their new own configs
// in one record, the others (the caller's check, an unknown topic, an
// operation on a list) are left as they were; validate_only commits
// nothing; a value is checked before the topic's existence, as Kafka's
// controller checks; unclean.leader.election.enable turned on elects the
// topic's offline partition in the same record.
func TestAlterConfigsTopics(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	u, err := c.CreateTopic(ctx, TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 3})
	require.NoError(t, err)
	for _, name := range []string{"a", "b", "c"} {
		_, err := c.CreateTopic(ctx, TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1,
			Configs: map[string]string{"retention.ms": "1", "max.message.bytes": "100"}})
		require.NoError(t, err)
	}
	// Partition 0 of "u" shrinks to [1], and broker 1 shuts down: offline.
	p := leaderOf(t, log, u.ID, 0)
	require.Equal(t, int32(1), p.Leader)
	_, err = c.AlterPartition(ctx, u.ID, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1})
	require.NoError(t, err)
	require.NoError(t, c.Shutdown(ctx, 1, 101))
	require.True(t, leaderOf(t, log, u.ID, 0).Offline())

	bad := errors.New("bad value")
	check := func(_ metadata.ConfigResource, configs map[string]string) error {
		if configs["max.message.bytes"] == "bad" {
			return bad
		}
		return nil
	}
	set := func(v string) *string { return &v }
	specs := []ConfigsSpec{
		{Resource: topicResource("u"), Configs: map[string]string{metadata.ConfigUncleanLeaderElection: "true"}},
		{Resource: topicResource("a"), Incremental: true, Changes: []metadata.ConfigChange{
			{Name: "retention.ms", Op: metadata.ConfigDelete}, {Name: "min.insync.replicas", Op: metadata.ConfigSet, Value: set("1")}}},
		{Resource: topicResource("b"), Configs: map[string]string{"max.message.bytes": "bad"}},
		{Resource: topicResource("c"), Incremental: true, Changes: []metadata.ConfigChange{{Name: "retention.ms", Op: metadata.ConfigAppend, Value: set("2")}}},
		{Resource: topicResource("nope"), Configs: map[string]string{"retention.ms": "1"}},
		{Resource: topicResource("nope2"), Configs: map[string]string{"max.message.bytes": "bad"}},
	}
	index := log.Image().Index
	results, err := c.AlterConfigs(ctx, specs, true, check)
	require.NoError(t, err)
	assert.NoError(t, results[0])
	assert.ErrorIs(t, results[2], bad, "validate_only checks as the real thing")
	assert.Equal(t, index, log.Image().Index, "validate_only commits nothing")
	assert.True(t, leaderOf(t, log, u.ID, 0).Offline(), "and elects nothing")

	results, err = c.AlterConfigs(ctx, specs, false, check)
	require.NoError(t, err)
	require.Len(t, results, len(specs))
	assert.NoError(t, results[0])
	assert.NoError(t, results[1])
	assert.ErrorIs(t, results[2], bad)
	assert.ErrorIs(t, results[3], metadata.ErrInvalidConfig)
	assert.ErrorIs(t, results[4], metadata.ErrUnknownTopic)
	assert.ErrorIs(t, results[5], bad, "the value is checked before the topic's existence")

	im := log.Image()
	assert.Equal(t, index+1, im.Index, "one record")
	configs := func(name string) map[string]string {
		top, err := im.Topic(name)
		require.NoError(t, err)
		return top.Configs
	}
	assert.Equal(t, map[string]string{metadata.ConfigUncleanLeaderElection: "true"}, configs("u"))
	assert.Equal(t, map[string]string{"max.message.bytes": "100", "min.insync.replicas": "1"}, configs("a"), "incremental: the others kept")
	assert.Equal(t, map[string]string{"retention.ms": "1", "max.message.bytes": "100"}, configs("b"))
	assert.Equal(t, map[string]string{"retention.ms": "1", "max.message.bytes": "100"}, configs("c"))
	p = leaderOf(t, log, u.ID, 0)
	assert.Equal(t, int32(2), p.Leader, "the first live replica, elected uncleanly")
	assert.Equal(t, []int32{2}, p.ISR)

	c.LeaderChanged(2, false)
	_, err = c.AlterConfigs(ctx, specs[:1], false, nil)
	assert.ErrorIs(t, err, ErrNotController)
}

// topicResource names topic name's configs.
func topicResource(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ConfigResourceTopic, Name: name}
}
