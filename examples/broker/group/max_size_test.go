package group

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFullGroupRefusesNewMembers: a Stable group at group.max.size answers
// a new member's JoinGroup GROUP_MAX_SIZE_REACHED with no member id, before
// KIP-394 would hand it one, and stays as it is; its own members still
// rejoin.
func TestFullGroupRefusesNewMembers(t *testing.T) {
	c, clk := newTestCoordinator(t, WithMaxSize(2))
	res := stableGroup(t, c, clk, "g", 2)

	for _, requireID := range []bool{false, true} {
		req := joinReq("g", "")
		req.RequireKnownMemberID = requireID
		got := join(c, req).one(t)
		assert.Equal(t, kerr.GroupMaxSizeReached, got.Err, "requireKnownMemberID=%v", requireID)
		assert.Empty(t, got.MemberID, "no member id is handed out")
		assert.Equal(t, int32(-1), got.Generation)
	}
	st, members := state(t, c, "g")
	assert.Equal(t, Stable, st, "the refusal does not rebalance")
	assert.Equal(t, ids(res), members)

	// A follower rejoining with its metadata unchanged gets its generation.
	got := join(c, joinReq("g", res[1].MemberID)).one(t)
	require.Nil(t, got.Err)
	assert.Equal(t, res[1].Generation, got.Generation)
}

// TestFirstRebalanceTakesUpToTheMaxSize: joins into a new group are
// accepted while fewer members than group.max.size await the rebalance.
func TestFirstRebalanceTakesUpToTheMaxSize(t *testing.T) {
	c, clk := newTestCoordinator(t, WithMaxSize(2))
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	third := join(c, joinReq("g", "")).one(t)
	assert.Equal(t, kerr.GroupMaxSizeReached, third.Err)
	assert.Empty(t, third.MemberID)

	for range 2 {
		clk.Advance(testDelay)
	}
	first, second := a.one(t), b.one(t)
	require.Nil(t, first.Err)
	require.Nil(t, second.Err)
	assert.Len(t, first.Members, 2, "the leader's answer lists the two it took")
}

// TestRebalanceKicksOutTheLastRejoiningMembers: during a rebalance a group
// at group.max.size counts the members that rejoined, not its members, as
// Kafka does: a new member may take the place of one that has not rejoined
// yet, which is then refused and removed when it does.
func TestRebalanceKicksOutTheLastRejoiningMembers(t *testing.T) {
	c, clk := newTestCoordinator(t, WithMaxSize(2))
	res := stableGroup(t, c, clk, "g", 2)
	leader, follower := res[0], res[1]

	lead := join(c, joinReq("g", leader.MemberID)) // a rebalance
	newcomer := join(c, joinReq("g", ""))
	assert.Zero(t, newcomer.n(), "one awaits: the newcomer is taken and waits")

	late := join(c, joinReq("g", follower.MemberID)).one(t)
	assert.Equal(t, kerr.GroupMaxSizeReached, late.Err, "two await already")
	assert.Empty(t, late.MemberID)

	// The follower is gone: everyone left has rejoined, and the
	// rebalance completes at once.
	l, n := lead.one(t), newcomer.one(t)
	require.Nil(t, l.Err)
	require.Nil(t, n.Err)
	assert.Equal(t, leader.Generation+1, l.Generation)
	assert.ElementsMatch(t, []string{leader.MemberID, n.MemberID}, memberIDs(l.Members))
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", follower), "removed")
}

// TestLoadedGroupOverTheMaxSizeRebalances: a group loaded with more
// members than group.max.size (lowered since) rebalances at once, as
// Kafka's onLoaded does, and keeps the first members to rejoin.
func TestLoadedGroupOverTheMaxSizeRebalances(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	res := stableGroup(t, c, clk, "g", 3)
	require.NoError(t, c.Close())

	again, _ := restartOn(t, store, epoch.Add(time.Minute), WithMaxSize(2))
	st, members := state(t, again, "g")
	require.Equal(t, PreparingRebalance, st)
	assert.Equal(t, ids(res), members, "its members stay until the rebalance")
	assert.Equal(t, kerr.RebalanceInProgress, heartbeat(again, "g", res[0]))

	first, second := join(again, joinReq("g", res[0].MemberID)), join(again, joinReq("g", res[1].MemberID))
	third := join(again, joinReq("g", res[2].MemberID)).one(t)
	assert.Equal(t, kerr.GroupMaxSizeReached, third.Err)
	f, s := first.one(t), second.one(t)
	require.Nil(t, f.Err)
	require.Nil(t, s.Err)
	assert.Equal(t, res[0].Generation+1, f.Generation)
	_, members = state(t, again, "g")
	assert.Equal(t, ids(res[:2]), members)
}

// TestLoadedGroupWithinTheMaxSizeStaysStable: a loaded group at exactly
// group.max.size is not over it.
func TestLoadedGroupWithinTheMaxSizeStaysStable(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	stableGroup(t, c, clk, "g", 2)
	require.NoError(t, c.Close())

	again, _ := restartOn(t, store, epoch.Add(time.Minute), WithMaxSize(2))
	st, _ := state(t, again, "g")
	assert.Equal(t, Stable, st)
}

func TestMaxSizeMustBePositive(t *testing.T) {
	_, err := New(WithMaxSize(0))
	assert.True(t, errors.Is(err, ErrInvalidConfig), "group.max.size is at least 1: %v", err)
}
