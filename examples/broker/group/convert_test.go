package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestConvertToConsumer: a Stable group's members are handed over with
// their generation, protocols and assignments; the group is left Empty,
// and a member's next heartbeat no longer finds it here. A refusal of
// the conversion leaves the group as it was; a group of another protocol
// type is not handed over.
func TestConvertToConsumer(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)

	found, err := c.ConvertToConsumer("g", "consumer", func(Conversion) *kerr.Error { return kerr.CoordinatorNotAvailable })
	assert.True(t, found)
	assert.Equal(t, kerr.CoordinatorNotAvailable, err, "the adopter's refusal")
	st, members := state(t, c, "g")
	assert.Equal(t, Stable, st, "a refused conversion changes nothing")
	assert.Len(t, members, 2)

	found, err = c.ConvertToConsumer("g", "connect", func(Conversion) *kerr.Error { t.Fatal("adopted"); return nil })
	assert.True(t, found)
	assert.Equal(t, kerr.InconsistentGroupProtocol, err, "another protocol type")

	var got Conversion
	found, err = c.ConvertToConsumer("g", "consumer", func(cv Conversion) *kerr.Error { got = cv; return nil })
	require.True(t, found)
	require.Nil(t, err)
	assert.Equal(t, int32(1), got.Generation)
	assert.Equal(t, "range", got.Protocol)
	require.Len(t, got.Members, 2)
	for i, m := range got.Members {
		assert.Equal(t, res[i].MemberID, m.MemberID, "in join order")
		assert.Equal(t, assignment(m.MemberID), m.Assignment, "with its assignment")
		assert.NotEmpty(t, m.Protocols)
		assert.Positive(t, m.SessionTimeout)
	}
	st, members = state(t, c, "g")
	assert.Equal(t, Empty, st, "the group stays, Empty, with its offsets")
	assert.Empty(t, members)
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", res[0]))

	found, err = c.ConvertToConsumer("g", "consumer", func(Conversion) *kerr.Error { t.Fatal("adopted"); return nil })
	assert.False(t, found, "no members: nothing to convert")
	assert.Nil(t, err)
}

// TestFromConsumer: a consumer group's classic members handed back make
// a classic group at their generation, rebalancing: a heartbeat at the
// generation is told to rejoin, and the members that rejoin within the
// rebalance timeout, not only the initial delay, form the next
// generation with the protocol they share.
func TestFromConsumer(t *testing.T) {
	c, clk := newTestCoordinator(t)
	cm := func(id string, protos ...string) ConvertedMember {
		return ConvertedMember{MemberID: id, ClientID: "client", SessionTimeout: testSession, RebalanceTimeout: testRebalance,
			Protocols: protocols(protos...), Assignment: assignment(id)}
	}
	assert.Equal(t, kerr.InconsistentGroupProtocol, c.FromConsumer(Conversion{Group: "g", Generation: 7,
		Members: []ConvertedMember{cm("a", "range"), cm("b", "roundrobin")}}), "no protocol in common")
	st, members := state(t, c, "g")
	assert.Equal(t, Empty, st)
	assert.Empty(t, members, "a refusal adds nobody")

	require.Nil(t, c.FromConsumer(Conversion{Group: "g", Generation: 7,
		Members: []ConvertedMember{cm("a", "cooperative-sticky", "range"), cm("b", "range")}}))
	st, members = state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st)
	assert.ElementsMatch(t, []string{"a", "b"}, members)
	assert.Equal(t, kerr.RebalanceInProgress, heartbeat(c, "g", JoinResult{MemberID: "a", Generation: 7}))
	assert.Equal(t, kerr.IllegalGeneration, heartbeat(c, "g", JoinResult{MemberID: "b", Generation: 6}))
	assert.Equal(t, kerr.InconsistentGroupProtocol, c.FromConsumer(Conversion{Group: "g", Generation: 7,
		Members: []ConvertedMember{cm("c", "range")}}), "the classic group has members")

	ja := join(c, joinReq("g", "a", "cooperative-sticky", "range"))
	clk.Advance(2 * testDelay)
	assert.Zero(t, ja.n(), "the rebalance waits for b past the initial delay")
	jb := join(c, joinReq("g", "b", "range"))
	ra, rb := ja.one(t), jb.one(t)
	require.Nil(t, ra.Err)
	require.Nil(t, rb.Err)
	assert.Equal(t, int32(8), ra.Generation, "the generation after the consumer group's")
	assert.Equal(t, "range", ra.Protocol, "the protocol both support")
	syncAll(t, c, "g", []JoinResult{ra, rb})
	st, _ = state(t, c, "g")
	assert.Equal(t, Stable, st)
}
