package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/metalog"
)

func TestParseCluster(t *testing.T) {
	c, err := Parse("3@127.0.0.1:9094, 1@127.0.0.1:9092,2@localhost:9093", "", 2)
	require.NoError(t, err)
	assert.Equal(t, []Node{{1, "127.0.0.1", 9092}, {2, "localhost", 9093}, {3, "127.0.0.1", 9094}}, c.nodes, "sorted by id")
	assert.Equal(t, []metalog.Voter{{ID: 1, Addr: "127.0.0.1:10092"}, {ID: 2, Addr: "localhost:10093"}, {ID: 3, Addr: "127.0.0.1:10094"}},
		c.voters, "every broker a voter, at its Kafka port + 1000")
	assert.Equal(t, 3, c.Size())

	c, err = Parse("1@h:1,2@h:2", "2@q:20,1@q:10", 1)
	require.NoError(t, err)
	assert.Equal(t, []metalog.Voter{{ID: 1, Addr: "q:10"}, {ID: 2, Addr: "q:20"}}, c.voters, "controller.quorum.voters")

	for _, bad := range []struct{ spec, voters, want string }{
		{"1@127.0.0.1:9092", "", "node.id 2 is not in"},
		{"1@127.0.0.1:9092,1@127.0.0.1:9093,2@127.0.0.1:9094", "", "listed twice"},
		{"1-127.0.0.1:9092", "", "want id@host:port"},
		{"x@127.0.0.1:9092", "", "not a node id"},
		{"8388608@127.0.0.1:9092", "", "not a node id"},
		{"2@127.0.0.1", "", "missing port"},
		{"2@127.0.0.1:0", "", "not a port"},
		{"2@127.0.0.1:65000", "", "leaves no room"},
		{"2@h:1,3@h:2", "2@q:1", "every broker of --cluster is a voter"},
		{"2@h:1", "2@q", "missing port"},
	} {
		_, err := Parse(bad.spec, bad.voters, 2)
		assert.ErrorContains(t, err, bad.want, bad.spec)
	}
}

// TestReplicaPlacement: the placement the README and CreateTopics
// document, which a manual assignment must match.
func TestReplicaPlacement(t *testing.T) {
	c, err := Parse("1@h:1,2@h:2,3@h:3", "", 1)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, c.Placement(0, 3))
	assert.Equal(t, []int32{2, 3, 1}, c.Placement(1, 3))
	assert.Equal(t, []int32{3, 1, 2}, c.Placement(2, 3))
	assert.Equal(t, []int32{1, 2, 3}, c.Placement(3, 3))
	assert.Equal(t, []int32{2, 3}, c.Placement(1, 2))
	assert.Equal(t, []int32{3}, c.Placement(2, 1))

	alone := Single(Node{7, "127.0.0.1", 9092})
	assert.Equal(t, []int32{7}, alone.Placement(4, 1))
	assert.Empty(t, alone.voters, "a broker alone runs no quorum")
}
