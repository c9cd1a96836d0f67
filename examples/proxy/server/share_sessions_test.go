package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// legsByNode indexes legs by their upstream broker.
func legsByNode(legs []*shareLeg) map[int32]*shareLeg {
	m := map[int32]*shareLeg{}
	for _, l := range legs {
		m[l.node] = l
	}
	return m
}

// TestShareSessionsAcrossLeaders walks a client's share session over
// partitions of two leaders: it opens a session at each (epoch 0), names
// only what changed afterwards, each upstream session at its own epoch,
// moves a partition whose leader changed (forgotten at the old, named at
// the new, whose session opens), checks the client's epoch, routes
// acknowledgements to where the records were acquired, and closes every
// opened session.
func TestShareSessionsAcrossLeaders(t *testing.T) {
	var topic [16]byte
	topic[0] = 1
	a, b, c := shareTP{topic, 0}, shareTP{topic, 1}, shareTP{topic, 2}
	leaders := map[shareTP]int32{a: 1, b: 2, c: 1}
	leader := func(tp shareTP) int32 { return leaders[tp] }
	ss := newShareSessions()
	k := shareMember{"g", "m"}

	legs := legsByNode(ss.open(k, []shareTP{a, b}, map[shareTP]int32{a: 100, b: 200}, leader))
	require.Len(t, legs, 2)
	assert.Equal(t, int32(0), legs[1].epoch, "opens upstream")
	assert.Equal(t, []shareTP{a}, legs[1].name)
	assert.Equal(t, int32(200), legs[2].maxBytes[b])

	_, err := ss.step(k, 2, nil, nil, nil, leader)
	assert.Equal(t, kerr.InvalidShareSessionEpoch, err, "epoch out of turn")
	_, err = ss.step(shareMember{"g", "other"}, 1, nil, nil, nil, leader)
	assert.Equal(t, kerr.ShareSessionNotFound, err)

	legs = legsByNode(mustStep(t, ss, k, 1, []shareTP{c}, nil, leader))
	require.Len(t, legs, 2, "both upstream sessions fetch")
	assert.Equal(t, int32(1), legs[1].epoch)
	assert.Equal(t, []shareTP{c}, legs[1].name, "only the new partition")
	assert.Empty(t, legs[2].name, "nothing changed at 2")

	leaders[a] = 2 // a's leader moved
	legs = legsByNode(mustStep(t, ss, k, 2, nil, nil, leader))
	assert.Equal(t, []shareTP{a}, legs[1].forget, "forgotten at its old leader")
	assert.Equal(t, []shareTP{a}, legs[2].name, "named at its new one")
	assert.Equal(t, int32(2), legs[2].epoch)
	assert.Equal(t, int32(100), legs[2].maxBytes[a], "with the client's partition_max_bytes")

	ackLegs, orphans, err := ss.ack(k, 3, []shareTP{b, c})
	require.Nil(t, err)
	assert.Empty(t, orphans)
	acked := legsByNode(ackLegs)
	require.Len(t, acked, 2)
	assert.True(t, acked[1].owns[c])
	assert.True(t, acked[2].owns[b])
	assert.Equal(t, int32(3), acked[1].epoch, "an acknowledgement moves each session it goes to")

	legs = legsByNode(mustStep(t, ss, k, 4, nil, []shareTP{c}, leader))
	assert.Equal(t, []shareTP{c}, legs[1].forget, "the client forgot c: 1 holds nothing now")
	legs = legsByNode(mustStep(t, ss, k, 5, nil, nil, leader))
	require.Len(t, legs, 1, "1 left once its forgets were sent")
	assert.Equal(t, int32(5), legs[2].epoch, "2: opened, two fetches, an acknowledgement, a fetch before")

	closing, _, err := ss.ack(k, -1, []shareTP{a})
	require.Nil(t, err)
	require.Len(t, closing, 1)
	assert.Equal(t, int32(-1), closing[0].epoch)
	assert.True(t, closing[0].owns[a])
	_, err = ss.step(k, 1, nil, nil, nil, leader)
	assert.Equal(t, kerr.ShareSessionNotFound, err, "closed")
}

func mustStep(t *testing.T, ss *shareSessions, k shareMember, epoch int32, add, forget []shareTP, leader func(shareTP) int32) []*shareLeg {
	t.Helper()
	legs, err := ss.step(k, epoch, add, forget, nil, leader)
	require.Nil(t, err)
	return legs
}

// TestShareFetchClosingCarriesAcks checks that a request closing the
// session (-1) is planned as a leg at -1 for each upstream session, each
// owning its partitions, so that their acknowledgements reach them.
func TestShareFetchClosingCarriesAcks(t *testing.T) {
	var topic [16]byte
	a, b := shareTP{topic, 0}, shareTP{topic, 1}
	leaders := map[shareTP]int32{a: 1, b: 2}
	leader := func(tp shareTP) int32 { return leaders[tp] }
	ss := newShareSessions()
	k := shareMember{"g", "m"}
	ss.open(k, []shareTP{a, b}, nil, leader)
	mustStep(t, ss, k, 1, nil, nil, leader)
	legs, err := ss.step(k, -1, nil, nil, nil, leader)
	require.Nil(t, err)
	byNode := legsByNode(legs)
	require.Len(t, byNode, 2)
	for node, tp := range map[int32]shareTP{1: a, 2: b} {
		assert.Equal(t, int32(-1), byNode[node].epoch, "%d's session closes", node)
		assert.True(t, byNode[node].owns[tp], "%d's acknowledgements go in its closing leg", node)
	}
	_, err = ss.step(k, 2, nil, nil, nil, leader)
	assert.Equal(t, kerr.ShareSessionNotFound, err, "closed")
}
