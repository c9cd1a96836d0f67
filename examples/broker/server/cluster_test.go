package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCluster(t *testing.T) {
	c, err := parseCluster("3@127.0.0.1:9094, 1@127.0.0.1:9092,2@localhost:9093", 2)
	require.NoError(t, err)
	assert.Equal(t, []node{{1, "127.0.0.1", 9092}, {2, "localhost", 9093}, {3, "127.0.0.1", 9094}}, c.nodes, "sorted by id")
	assert.Equal(t, int32(1), c.controller())
	assert.False(t, c.isController())
	assert.Equal(t, 3, c.size())

	for _, bad := range []struct{ spec, want string }{
		{"1@127.0.0.1:9092", "node.id 2 is not in"},
		{"1@127.0.0.1:9092,1@127.0.0.1:9093,2@127.0.0.1:9094", "listed twice"},
		{"1-127.0.0.1:9092", "want id@host:port"},
		{"x@127.0.0.1:9092", "not a node id"},
		{"8388608@127.0.0.1:9092", "not a node id"},
		{"2@127.0.0.1", "missing port"},
		{"2@127.0.0.1:0", "not a port"},
	} {
		_, err := parseCluster(bad.spec, 2)
		assert.ErrorContains(t, err, bad.want, bad.spec)
	}
}

// TestReplicaPlacement: the placement the README and CreateTopics document.
func TestReplicaPlacement(t *testing.T) {
	c, err := parseCluster("1@h:1,2@h:2,3@h:3", 1)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, c.replicasOf(0, 3))
	assert.Equal(t, []int32{2, 3, 1}, c.replicasOf(1, 3))
	assert.Equal(t, []int32{3, 1, 2}, c.replicasOf(2, 3))
	assert.Equal(t, []int32{1, 2, 3}, c.replicasOf(3, 3))
	assert.Equal(t, []int32{2, 3}, c.replicasOf(1, 2))
	assert.Equal(t, []int32{3}, c.replicasOf(2, 1))
	assert.Equal(t, []int32{1, 2, 3}, c.replicasOf(0, 5), "at most one replica per broker")
	assert.Equal(t, int32(3), c.leaderOf(5))

	alone := single(node{7, "127.0.0.1", 9092})
	assert.Equal(t, []int32{7}, alone.replicasOf(4, 1))
	assert.True(t, alone.isController())
}
