package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestAlterConfigsBrokersAndGroups: broker resources (the cluster default
// and a broker by id) and a group are decided in one record with a topic;
// a broker name that is no id is INVALID_REQUEST, a bad value is the
// check's error, an APPEND to a config that is no list INVALID_CONFIG;
// incremental changes start from the image's configs; validate_only
// commits nothing.
func TestAlterConfigsBrokersAndGroups(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	_, err := c.CreateTopic(ctx, TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1})
	require.NoError(t, err)
	group := metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: "g"}
	bad := errors.New("bad value")
	check := func(res metadata.ConfigResource, configs map[string]string) error {
		if configs["log.retention.ms"] == "bad" {
			return bad
		}
		return nil
	}
	set := func(v string) *string { return &v }
	specs := []ConfigsSpec{
		{Resource: metadata.ClusterDefault, Configs: map[string]string{"log.retention.ms": "100", "message.max.bytes": "2000"}},
		{Resource: metadata.BrokerResource(2), Incremental: true, Changes: []metadata.ConfigChange{
			{Name: "log.retention.ms", Op: metadata.ConfigSet, Value: set("50")}}},
		{Resource: group, Configs: map[string]string{"share.auto.offset.reset": "earliest"}},
		{Resource: topicResource("a"), Configs: map[string]string{"retention.ms": "1"}},
		{Resource: metadata.ConfigResource{Type: metadata.ConfigResourceBroker, Name: "x"}, Configs: map[string]string{"log.retention.ms": "1"}},
		{Resource: metadata.BrokerResource(3), Configs: map[string]string{"log.retention.ms": "bad"}},
		{Resource: metadata.BrokerResource(1), Incremental: true, Changes: []metadata.ConfigChange{
			{Name: "log.retention.ms", Op: metadata.ConfigAppend, Value: set("1")}}},
	}
	index := log.Image().Index
	results, err := c.AlterConfigs(ctx, specs, true, check)
	require.NoError(t, err)
	assert.NoError(t, results[0])
	assert.ErrorIs(t, results[5], bad, "validate_only checks as the real thing")
	assert.Equal(t, index, log.Image().Index, "validate_only commits nothing")

	results, err = c.AlterConfigs(ctx, specs, false, check)
	require.NoError(t, err)
	for i := range 4 {
		assert.NoError(t, results[i], "spec %d", i)
	}
	assert.ErrorIs(t, results[4], metadata.ErrInvalidRequest)
	assert.EqualError(t, results[4], "Node id must be an integer, but it is: x")
	assert.ErrorIs(t, results[5], bad)
	assert.ErrorIs(t, results[6], metadata.ErrInvalidConfig)

	im := log.Image()
	assert.Equal(t, index+1, im.Index, "one record")
	assert.Equal(t, map[string]string{"log.retention.ms": "100", "message.max.bytes": "2000"}, im.Configs(metadata.ClusterDefault))
	assert.Equal(t, map[string]string{"log.retention.ms": "50"}, im.Configs(metadata.BrokerResource(2)))
	assert.Nil(t, im.Configs(metadata.BrokerResource(3)))
	assert.Equal(t, map[string]string{"share.auto.offset.reset": "earliest"}, im.Configs(group))
	assert.Equal(t, map[string]string{"retention.ms": "1"}, im.Configs(topicResource("a")))

	// Incremental: from the configs the image holds.
	results, err = c.AlterConfigs(ctx, []ConfigsSpec{{Resource: metadata.ClusterDefault, Incremental: true, Changes: []metadata.ConfigChange{
		{Name: "message.max.bytes", Op: metadata.ConfigDelete}, {Name: "log.retention.bytes", Op: metadata.ConfigSet, Value: set("9")}}}}, false, check)
	require.NoError(t, err)
	require.NoError(t, results[0])
	assert.Equal(t, map[string]string{"log.retention.ms": "100", "log.retention.bytes": "9"}, log.Image().Configs(metadata.ClusterDefault))
}

// TestClusterUncleanDefault: the cluster default of
// unclean.leader.election.enable turned on elects an offline partition in
// its record, and replaces the controller's own setting in the fencings
// that follow.
func TestClusterUncleanDefault(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	u, err := c.CreateTopic(ctx, TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 3})
	require.NoError(t, err)
	p := leaderOf(t, log, u.ID, 0)
	require.Equal(t, int32(1), p.Leader)
	_, err = c.AlterPartition(ctx, u.ID, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1})
	require.NoError(t, err)
	require.NoError(t, c.Shutdown(ctx, 1, 101))
	require.True(t, leaderOf(t, log, u.ID, 0).Offline(), "clean: the ISR's last member alone may lead it")

	on := map[string]string{metadata.ConfigUncleanLeaderElection: "true"}
	results, err := c.AlterConfigs(ctx, []ConfigsSpec{{Resource: metadata.ClusterDefault, Configs: on}}, false, nil)
	require.NoError(t, err)
	require.NoError(t, results[0])
	p = leaderOf(t, log, u.ID, 0)
	assert.Equal(t, int32(2), p.Leader, "elected uncleanly in the same record")
	assert.Equal(t, []int32{2}, p.ISR)

	// Broker 2, alone in the ISR, shuts down: the dynamic default lets
	// broker 3 lead, though the controller's own setting is false.
	require.NoError(t, c.Shutdown(ctx, 2, 102))
	p = leaderOf(t, log, u.ID, 0)
	assert.Equal(t, int32(3), p.Leader)
	assert.Equal(t, []int32{3}, p.ISR)
}
