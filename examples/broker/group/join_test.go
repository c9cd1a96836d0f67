package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJoinOneMember(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a := join(c, joinReq("g", ""))
	st, members := state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st)
	assert.Len(t, members, 1)

	clk.Advance(testDelay - time.Millisecond)
	require.Zero(t, a.n(), "the first rebalance of an empty group waits the initial delay")
	clk.Advance(time.Millisecond)
	res := a.one(t)
	require.Nil(t, res.Err)
	assert.Equal(t, int32(1), res.Generation)
	assert.Equal(t, res.MemberID, res.Leader, "the only member leads")
	assert.Equal(t, "consumer", res.ProtocolType)
	assert.Equal(t, "range", res.Protocol)
	require.Len(t, res.Members, 1)
	assert.Equal(t, []byte("meta-range"), res.Members[0].Metadata, "the leader gets each member's metadata")

	syncAll(t, c, "g", []JoinResult{res})
	st, _ = state(t, c, "g")
	assert.Equal(t, Stable, st)
	assert.Nil(t, heartbeat(c, "g", res))
}

func TestThreeMembersElectALeaderAndGetTheirAssignments(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 3)
	for _, r := range res {
		assert.Equal(t, int32(1), r.Generation)
		assert.Equal(t, res[0].MemberID, r.Leader, "the first member to join leads")
	}
	assert.ElementsMatch(t, ids(res), memberIDs(res[0].Members), "the leader sees every member")
	assert.Empty(t, res[1].Members, "followers see none")
	assert.Empty(t, res[2].Members)

	d, found, err := c.DescribeGroup("g")
	require.Nil(t, err)
	require.True(t, found)
	assert.Equal(t, "range", d.Protocol)
	for _, m := range d.Members {
		assert.Equal(t, assignment(m.MemberID), m.Assignment)
	}
}

func TestLeaveRebalances(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	leader, follower := res[0], res[1]

	gerr, errs := c.LeaveGroup("g", []MemberIdentity{{MemberID: follower.MemberID, Reason: "shutting down"}})
	require.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{nil}, errs)
	st, members := state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st)
	assert.Equal(t, []string{leader.MemberID}, members)
	assert.Equal(t, kerr.RebalanceInProgress, heartbeat(c, "g", leader), "the heartbeat tells the leader to rejoin")

	// Everyone left has rejoined: the rebalance completes at once.
	a := join(c, joinReq("g", leader.MemberID))
	r := a.one(t)
	require.Nil(t, r.Err)
	assert.Equal(t, int32(2), r.Generation)
	assert.Equal(t, []string{leader.MemberID}, memberIDs(r.Members))

	_, errs = c.LeaveGroup("g", []MemberIdentity{{MemberID: follower.MemberID}})
	assert.Equal(t, []*kerr.Error{kerr.UnknownMemberID}, errs, "it is gone")
}

func TestMemberThatDoesNotRejoinIsRemovedAtTheRebalanceTimeout(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	leader, follower := res[0], res[1]

	a := join(c, joinReq("g", leader.MemberID)) // the leader rejoins: a rebalance
	start := clk.Now()
	// The follower heartbeats (so its session stays alive) but never
	// rejoins.
	for clk.Now()-start+3*time.Second < testRebalance {
		clk.Advance(3 * time.Second)
		require.Equal(t, kerr.RebalanceInProgress, heartbeat(c, "g", follower))
	}
	clk.Advance(start + testRebalance - time.Millisecond - clk.Now())
	require.Zero(t, a.n(), "the rebalance waits up to the rebalance timeout")
	clk.Advance(time.Millisecond)
	r := a.one(t)
	require.Nil(t, r.Err)
	assert.Equal(t, int32(2), r.Generation)
	assert.Equal(t, []string{leader.MemberID}, memberIDs(r.Members))
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", follower), "removed")
}

func TestInitialRebalanceDelayIsExtendedByNewMembers(t *testing.T) {
	c, clk := newTestCoordinator(t)
	first := join(c, joinReq("g", ""))
	clk.Advance(2 * time.Second)
	second := join(c, joinReq("g", ""))
	clk.Advance(time.Second)
	require.Zero(t, first.n(), "a member joined during the delay: it waits once more")
	clk.Advance(testDelay - time.Millisecond)
	require.Zero(t, first.n())
	clk.Advance(time.Millisecond)
	r1, r2 := first.one(t), second.one(t)
	assert.Equal(t, int32(1), r1.Generation)
	assert.Equal(t, int32(1), r2.Generation, "both in the first generation")
	assert.Len(t, r1.Members, 2)
}

func TestInitialRebalanceDelayEndsAtTheRebalanceTimeout(t *testing.T) {
	c, clk := newTestCoordinator(t)
	req := joinReq("g", "")
	req.RebalanceTimeout = 5 * time.Second
	first := join(c, req)
	for range 4 { // a member every second: each would extend the delay
		clk.Advance(time.Second)
		join(c, req)
	}
	clk.Advance(time.Second - time.Millisecond)
	require.Zero(t, first.n())
	clk.Advance(time.Millisecond)
	r := first.one(t)
	require.Nil(t, r.Err, "answered when the rebalance timeout (5s) is used up")
	assert.Len(t, r.Members, 5)
}

func TestMemberIDRequired(t *testing.T) {
	c, clk := newTestCoordinator(t)
	req := joinReq("g", "")
	req.RequireKnownMemberID = true
	r := join(c, req).one(t)
	require.Equal(t, kerr.MemberIDRequired, r.Err)
	require.NotEmpty(t, r.MemberID)
	_, members := state(t, c, "g")
	assert.Empty(t, members, "a pending member is no member yet")

	req.MemberID = r.MemberID
	a := join(c, req)
	clk.Advance(testDelay)
	got := a.one(t)
	require.Nil(t, got.Err)
	assert.Equal(t, r.MemberID, got.MemberID, "it joins with the id it was given")
	assert.Equal(t, int32(1), got.Generation)
}

func TestPendingMemberHoldsTheRebalanceUntilItsSessionEnds(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 1)
	req := joinReq("g", "")
	req.RequireKnownMemberID = true
	req.SessionTimeout = 5 * time.Second
	require.Equal(t, kerr.MemberIDRequired, join(c, req).one(t).Err) // never comes back

	a := join(c, joinReq("g", res[0].MemberID))
	require.Zero(t, a.n(), "the rebalance waits for the pending member")
	clk.Advance(5*time.Second - time.Millisecond)
	require.Zero(t, a.n())
	clk.Advance(time.Millisecond)
	r := a.one(t)
	require.Nil(t, r.Err, "the pending member's session ended, and with it the wait")
	assert.Equal(t, int32(2), r.Generation)
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(map[bool]string{false: "v5-v8", true: "v9 skip assignment"}[skip], func(t *testing.T) {
			c, clk := newTestCoordinator(t)
			reqs := []JoinRequest{joinReq("g", ""), joinReq("g", "")}
			reqs[0].InstanceID, reqs[1].InstanceID = "a", "b"
			pending := []*answers[JoinResult]{join(c, reqs[0]), join(c, reqs[1])}
			clk.Advance(2 * testDelay) // a second member extended the initial delay
			res := []JoinResult{pending[0].one(t), pending[1].one(t)}
			syncAll(t, c, "g", res)
			leader := res[0]

			// The leader's process restarts: it joins with no member id.
			reqs[0].SupportsSkipAssignment = skip
			r := join(c, reqs[0]).one(t)
			require.Nil(t, r.Err)
			assert.NotEqual(t, leader.MemberID, r.MemberID, "a new member id")
			assert.Equal(t, int32(1), r.Generation, "the same generation: no rebalance")
			if skip {
				assert.Equal(t, r.MemberID, r.Leader, "told it leads")
				assert.True(t, r.SkipAssignment, "and to skip the assignment")
				assert.Len(t, r.Members, 2)
			} else {
				assert.Equal(t, leader.MemberID, r.Leader, "the old leader id: it must not assign")
				assert.False(t, r.SkipAssignment)
			}
			st, members := state(t, c, "g")
			assert.Equal(t, Stable, st)
			assert.ElementsMatch(t, []string{r.MemberID, res[1].MemberID}, members)
			assert.Nil(t, heartbeat(c, "g", res[1]), "the other member notices nothing")

			// The old id is fenced; the new one gets its assignment back.
			old := HeartbeatRequest{Group: "g", MemberID: leader.MemberID, InstanceID: "a", Generation: 1}
			assert.Equal(t, kerr.FencedInstanceID, c.Heartbeat(old))
			got := syncGroup(c, SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: "a", Generation: 1}).one(t)
			require.Nil(t, got.Err)
			assert.Equal(t, assignment(leader.MemberID), got.Assignment, "the instance keeps its assignment")
		})
	}
}

func TestStaticMemberWithChangedProtocolRebalances(t *testing.T) {
	c, clk := newTestCoordinator(t)
	req := joinReq("g", "", "range", "roundrobin")
	req.InstanceID = "a"
	first := join(c, req)
	clk.Advance(testDelay)
	r := first.one(t)
	syncAll(t, c, "g", []JoinResult{r})

	req2 := joinReq("g", "", "roundrobin")
	req2.InstanceID = "a"
	a := join(c, req2)
	r2 := a.one(t)
	require.Nil(t, r2.Err, "the only member rejoined: the rebalance completes at once")
	assert.Equal(t, int32(2), r2.Generation)
	assert.Equal(t, "roundrobin", r2.Protocol)
}

func TestStaticMemberReplacedWhileWaitingIsFenced(t *testing.T) {
	c, clk := newTestCoordinator(t)
	req := joinReq("g", "")
	req.InstanceID = "a"
	old := join(c, req)
	clk.Advance(time.Second)
	newer := join(c, req) // a second process with the same instance id
	r := old.one(t)
	assert.Equal(t, kerr.FencedInstanceID, r.Err, "the replaced id's JoinGroup is fenced")
	clk.Advance(testDelay)
	got := newer.one(t)
	require.Nil(t, got.Err)
	_, members := state(t, c, "g")
	assert.Equal(t, []string{got.MemberID}, members)
}

func TestProtocolSelection(t *testing.T) {
	tests := []struct {
		name    string
		members [][]string
		want    string
	}{
		{"one shared", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin"}}, "roundrobin"},
		{"most votes", [][]string{{"sticky", "range"}, {"range", "sticky"}, {"sticky", "range"}}, "sticky"},
		{"preference among shared", [][]string{{"cooperative-sticky", "range"}, {"range", "cooperative-sticky"}, {"roundrobin", "range", "cooperative-sticky"}}, "range"},
		{"tie goes to the first member's vote", [][]string{{"range", "sticky"}, {"sticky", "range"}}, "range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newTestCoordinator(t)
			var pending []*answers[JoinResult]
			for _, ps := range tt.members {
				pending = append(pending, join(c, joinReq("g", "", ps...)))
			}
			clk.Advance(2 * testDelay) // a second member extended the initial delay
			for _, p := range pending {
				r := p.one(t)
				require.Nil(t, r.Err)
				assert.Equal(t, tt.want, r.Protocol)
			}
		})
	}
}

func TestInconsistentGroupProtocol(t *testing.T) {
	c, clk := newTestCoordinator(t)
	join(c, joinReq("g", "", "range", "sticky"))
	join(c, joinReq("g", "", "sticky"))

	tests := []struct {
		name string
		req  JoinRequest
	}{
		{"no protocol shared", joinReq("g", "", "cooperative-sticky")},
		{"shared with one member only", joinReq("g", "", "range")},
		{"another protocol type", func() JoinRequest { r := joinReq("g", "", "sticky"); r.ProtocolType = "connect"; return r }()},
		{"no protocols for a new group", func() JoinRequest { r := joinReq("other", ""); r.Protocols = nil; return r }()},
		{"no protocol type for a new group", func() JoinRequest { r := joinReq("other", ""); r.ProtocolType = ""; return r }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, kerr.InconsistentGroupProtocol, join(c, tt.req).one(t).Err)
		})
	}
	clk.Advance(2 * testDelay) // a second member extended the initial delay
	st, members := state(t, c, "g")
	assert.Equal(t, CompletingRebalance, st)
	assert.Len(t, members, 2, "the refused members did not join")
}

func TestJoinErrors(t *testing.T) {
	c, _ := newTestCoordinator(t, WithSessionTimeouts(6*time.Second, time.Minute))
	tests := []struct {
		name string
		req  JoinRequest
		want *kerr.Error
	}{
		{"no group id", joinReq("", ""), kerr.InvalidGroupID},
		{"session below the minimum", func() JoinRequest { r := joinReq("g", ""); r.SessionTimeout = 5 * time.Second; return r }(), kerr.InvalidSessionTimeout},
		{"session above the maximum", func() JoinRequest { r := joinReq("g", ""); r.SessionTimeout = 2 * time.Minute; return r }(), kerr.InvalidSessionTimeout},
		{"member id of a group that does not exist", joinReq("nope", "someone"), kerr.UnknownMemberID},
		{"static instance unknown under that member id", func() JoinRequest { r := joinReq("nope", ""); r.InstanceID = "x"; r.MemberID = "y"; return r }(), kerr.UnknownMemberID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := join(c, tt.req).one(t)
			assert.Equal(t, tt.want, r.Err)
			assert.Equal(t, int32(-1), r.Generation)
		})
	}
}

func TestRejoinDuringCompletingRebalanceGetsTheCurrentGeneration(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	clk.Advance(2 * testDelay) // a second member extended the initial delay
	ra, rb := a.one(t), b.one(t)
	// b lost its answer and rejoins with the same metadata.
	again := join(c, joinReq("g", rb.MemberID)).one(t)
	require.Nil(t, again.Err)
	assert.Equal(t, rb.Generation, again.Generation)
	assert.Equal(t, ra.MemberID, again.Leader)
	st, _ := state(t, c, "g")
	assert.Equal(t, CompletingRebalance, st, "no new rebalance")
}

func TestSecondJoinFromAMemberAnswersTheFirst(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	first := join(c, joinReq("g", res[1].MemberID, "range", "sticky"))
	second := join(c, joinReq("g", res[1].MemberID, "range", "sticky"))
	assert.Equal(t, kerr.RebalanceInProgress, first.one(t).Err, "answered, not forgotten")
	require.Zero(t, second.n())
	join(c, joinReq("g", res[0].MemberID))
	assert.Nil(t, second.one(t).Err)
}

func TestSyncGroupErrors(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	r := res[0]
	tests := []struct {
		name string
		req  SyncRequest
		want *kerr.Error
	}{
		{"unknown group", SyncRequest{Group: "nope", MemberID: r.MemberID, Generation: 1}, kerr.UnknownMemberID},
		{"unknown member", SyncRequest{Group: "g", MemberID: "who", Generation: 1}, kerr.UnknownMemberID},
		{"old generation", SyncRequest{Group: "g", MemberID: r.MemberID, Generation: 0}, kerr.IllegalGeneration},
		{"other protocol", SyncRequest{Group: "g", MemberID: r.MemberID, Generation: 1, Protocol: "sticky"}, kerr.InconsistentGroupProtocol},
		{"other protocol type", SyncRequest{Group: "g", MemberID: r.MemberID, Generation: 1, ProtocolType: "connect"}, kerr.InconsistentGroupProtocol},
		{"no group id", SyncRequest{MemberID: r.MemberID, Generation: 1}, kerr.InvalidGroupID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, syncGroup(c, tt.req).one(t).Err)
		})
	}
	join(c, joinReq("g", r.MemberID, "range", "roundrobin")) // a rebalance
	assert.Equal(t, kerr.RebalanceInProgress, syncGroup(c, SyncRequest{Group: "g", MemberID: r.MemberID, Generation: 1}).one(t).Err)
}

func TestRebalanceAnswersWaitingSyncGroups(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	clk.Advance(2 * testDelay) // a second member extended the initial delay
	ra, rb := a.one(t), b.one(t)
	s := syncGroup(c, SyncRequest{Group: "g", MemberID: rb.MemberID, Generation: rb.Generation})
	require.Zero(t, s.n())
	// A third member joins before the leader syncs: the follower's
	// SyncGroup is answered and the group rebalances.
	join(c, joinReq("g", ""))
	assert.Equal(t, kerr.RebalanceInProgress, s.one(t).Err)
	st, _ := state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st)
	_ = ra
}

func TestMembersThatDoNotSyncAreRemoved(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	clk.Advance(2 * testDelay) // a second member extended the initial delay
	ra, rb := a.one(t), b.one(t)
	// The leader syncs; the follower never does, though it heartbeats.
	s := syncGroup(c, SyncRequest{Group: "g", MemberID: ra.MemberID, Generation: 1,
		Assignments: []Assignment{{ra.MemberID, assignment(ra.MemberID)}, {rb.MemberID, assignment(rb.MemberID)}}})
	require.Nil(t, s.one(t).Err)
	for range 6 {
		clk.Advance(3 * time.Second)
		require.Nil(t, heartbeat(c, "g", ra))
		require.Nil(t, heartbeat(c, "g", rb))
	}
	clk.Advance(testRebalance - 18*time.Second - time.Millisecond)
	st, members := state(t, c, "g")
	require.Equal(t, Stable, st)
	require.Len(t, members, 2)
	clk.Advance(time.Millisecond)
	st, members = state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st, "the rebalance timeout passed without its SyncGroup")
	assert.Equal(t, []string{ra.MemberID}, members)
}

func TestDisconnectWithdrawsJoin(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)

	// A new member's JoinGroup: its connection closes while it waits.
	var w testWaiter
	a := new(answers[JoinResult])
	c.JoinGroup(joinReq("g", ""), a.respond, &w)
	require.Equal(t, 1, w.disconnect())
	assert.Equal(t, kerr.UnknownMemberID, a.one(t).Err, "answered (into the closed connection)")
	_, members := state(t, c, "g")
	assert.ElementsMatch(t, ids(res), members, "the new member is gone")

	// A known member's: it stays a member, no longer awaiting join.
	b := new(answers[JoinResult])
	c.JoinGroup(joinReq("g", res[1].MemberID), b.respond, &w)
	require.Equal(t, 1, w.disconnect())
	assert.Equal(t, kerr.RebalanceInProgress, b.one(t).Err)
	leader := join(c, joinReq("g", res[0].MemberID))
	require.Zero(t, leader.n(), "the rebalance waits for the withdrawn member")
	again := join(c, joinReq("g", res[1].MemberID)) // it reconnects and rejoins
	assert.Equal(t, int32(2), leader.one(t).Generation)
	assert.Equal(t, int32(2), again.one(t).Generation)
}

func TestCloseAnswersWaitingRequests(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	clk.Advance(2 * testDelay) // a second member extended the initial delay
	rb := b.one(t)
	_ = a.one(t)
	s := syncGroup(c, SyncRequest{Group: "g", MemberID: rb.MemberID, Generation: rb.Generation})
	waiting := join(c, joinReq("h", ""))
	require.Zero(t, s.n())
	require.Zero(t, waiting.n())

	require.NoError(t, c.Close())
	assert.Equal(t, kerr.NotCoordinator, s.one(t).Err)
	assert.Equal(t, kerr.NotCoordinator, waiting.one(t).Err)
	assert.Equal(t, kerr.CoordinatorNotAvailable, join(c, joinReq("g", "")).one(t).Err)
	require.NoError(t, c.Close(), "idempotent")
}
