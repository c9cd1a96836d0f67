package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// TestCreatePartitions: the topics that pass grow in one record, those
// that fail (the decision's checks, or the caller's) are left as they
// were; validate_only commits nothing.
func TestCreatePartitions(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		_, err := c.CreateTopic(ctx, TopicSpec{Name: name, Partitions: 2, ReplicationFactor: 2})
		require.NoError(t, err)
	}
	index := log.Image().Index
	full := errors.New("full")
	check := func(top *metadata.Topic, count int32) error {
		if top.Name == "b" {
			return full
		}
		return nil
	}
	specs := []PartitionsSpec{{Topic: "a", Count: 4}, {Topic: "b", Count: 3}, {Topic: "nope", Count: 3}, {Topic: "a", Count: 1}}

	results, err := c.CreatePartitions(ctx, specs, true, check)
	require.NoError(t, err)
	assert.NoError(t, results[0])
	assert.Equal(t, index, log.Image().Index, "validate_only commits nothing")

	results, err = c.CreatePartitions(ctx, specs, false, check)
	require.NoError(t, err)
	require.Len(t, results, 4)
	assert.NoError(t, results[0])
	assert.ErrorIs(t, results[1], full)
	assert.ErrorIs(t, results[2], metadata.ErrUnknownTopic)
	assert.ErrorIs(t, results[3], metadata.ErrInvalidPartitions)
	im := log.Image()
	assert.Equal(t, index+1, im.Index, "one record")
	a, err := im.Topic("a")
	require.NoError(t, err)
	require.Len(t, a.Partitions, 4)
	assert.Equal(t, []int32{1, 2}, a.Partitions[3].Replicas, "partition 3 from broker index 3 mod 3 = 0")
	b, err := im.Topic("b")
	require.NoError(t, err)
	assert.Len(t, b.Partitions, 2)

	c.LeaderChanged(2, false)
	_, err = c.CreatePartitions(ctx, specs[:1], false, nil)
	assert.ErrorIs(t, err, ErrNotController)
}
