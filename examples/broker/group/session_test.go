package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSessionExpiresExactlyAtTheSessionTimeout(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	alive, silent := res[0], res[1]

	clk.Advance(time.Second)
	require.Nil(t, heartbeat(c, "g", silent)) // its last sign of life
	last := clk.Now()
	for clk.Now()+3*time.Second < last+testSession {
		clk.Advance(3 * time.Second)
		require.Nil(t, heartbeat(c, "g", alive))
	}
	clk.Advance(last + testSession - time.Millisecond - clk.Now())
	st, members := state(t, c, "g")
	require.Equal(t, Stable, st, "not before the session timeout")
	require.Len(t, members, 2)

	clk.Advance(time.Millisecond) // one tick: the deadline
	st, members = state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st, "expelled at the session timeout, and the group rebalances")
	assert.Equal(t, []string{alive.MemberID}, members)
	assert.Equal(t, kerr.RebalanceInProgress, heartbeat(c, "g", alive))
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", silent))

	r := join(c, joinReq("g", alive.MemberID)).one(t)
	assert.Equal(t, int32(2), r.Generation)
}

func TestEveryRequestOfAMemberRefreshesItsSession(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 1)
	r := res[0]
	step := testSession - time.Second
	clk.Advance(step)
	require.Nil(t, heartbeat(c, "g", r))
	clk.Advance(step)
	errs := commitNow(t, c, CommitRequest{Group: "g", MemberID: r.MemberID, Generation: r.Generation,
		Retention: -1, Offsets: []CommitOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}})
	require.Equal(t, []*kerr.Error{nil}, errs)
	clk.Advance(step)
	require.Nil(t, syncGroup(c, SyncRequest{Group: "g", MemberID: r.MemberID, Generation: r.Generation}).one(t).Err)
	clk.Advance(step)
	st, members := state(t, c, "g")
	assert.Equal(t, Stable, st)
	assert.Len(t, members, 1, "heartbeat, commit and sync each kept it alive")
	clk.Advance(time.Second)
	_, members = state(t, c, "g")
	assert.Empty(t, members, "then silence")
}

func TestNewMemberThatNeverHeartbeatsIsExpelledAfterItsFirstRebalance(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a := join(c, joinReq("g", ""))
	clk.Advance(testDelay)
	r := a.one(t)
	// Its session starts with the answer: it must heartbeat or sync.
	clk.Advance(testSession - time.Millisecond)
	_, members := state(t, c, "g")
	require.Len(t, members, 1)
	clk.Advance(time.Millisecond)
	st, members := state(t, c, "g")
	assert.Empty(t, members)
	assert.Equal(t, Empty, st, "the rebalance it started had nobody to wait for")
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", r))
}

func TestWaitingInSyncGroupKeepsAMemberAlive(t *testing.T) {
	c, clk := newTestCoordinator(t, WithSessionTimeouts(time.Second, time.Hour))
	a, b := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
	clk.Advance(2 * testDelay)
	ra, rb := a.one(t), b.one(t)
	s := syncGroup(c, SyncRequest{Group: "g", MemberID: rb.MemberID, Generation: rb.Generation})
	// The leader heartbeats but takes its time to assign; the follower
	// only waits in its SyncGroup, past its session timeout.
	for range 5 {
		clk.Advance(3 * time.Second)
		require.Nil(t, heartbeat(c, "g", ra))
	}
	_, members := state(t, c, "g")
	require.Len(t, members, 2, "a member waiting in SyncGroup is alive")
	syncGroup(c, SyncRequest{Group: "g", MemberID: ra.MemberID, Generation: 1,
		Assignments: []Assignment{{rb.MemberID, assignment(rb.MemberID)}}})
	assert.Equal(t, assignment(rb.MemberID), s.one(t).Assignment)
}

func TestLeaveGroupBatchAndByInstance(t *testing.T) {
	c, clk := newTestCoordinator(t)
	reqs := []JoinRequest{joinReq("g", ""), joinReq("g", ""), joinReq("g", "")}
	reqs[2].InstanceID = "static"
	var pending []*answers[JoinResult]
	for _, r := range reqs {
		pending = append(pending, join(c, r))
	}
	clk.Advance(2 * testDelay)
	var res []JoinResult
	for _, p := range pending {
		res = append(res, p.one(t))
	}
	gerr, errs := c.LeaveGroup("g", []MemberIdentity{
		{MemberID: res[0].MemberID},
		{MemberID: "nobody"},
		{InstanceID: "static"},                               // an administrator removing it
		{MemberID: res[1].MemberID, InstanceID: "elsewhere"}, // not this member's instance
	})
	require.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{nil, kerr.UnknownMemberID, nil, kerr.UnknownMemberID}, errs)
	_, members := state(t, c, "g")
	assert.Equal(t, []string{res[1].MemberID}, members)

	gerr, errs = c.LeaveGroup("nope", []MemberIdentity{{MemberID: "x"}})
	assert.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{kerr.UnknownMemberID}, errs)
	gerr, _ = c.LeaveGroup("", nil)
	assert.Equal(t, kerr.InvalidGroupID, gerr)
}

func TestHeartbeatErrors(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 1)
	r := res[0]
	tests := []struct {
		name string
		req  HeartbeatRequest
		want *kerr.Error
	}{
		{"ok", HeartbeatRequest{Group: "g", MemberID: r.MemberID, Generation: 1}, nil},
		{"no group id", HeartbeatRequest{MemberID: r.MemberID, Generation: 1}, kerr.InvalidGroupID},
		{"unknown group", HeartbeatRequest{Group: "nope", MemberID: r.MemberID, Generation: 1}, kerr.UnknownMemberID},
		{"unknown member", HeartbeatRequest{Group: "g", MemberID: "who", Generation: 1}, kerr.UnknownMemberID},
		{"old generation", HeartbeatRequest{Group: "g", MemberID: r.MemberID, Generation: 0}, kerr.IllegalGeneration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, c.Heartbeat(tt.req))
		})
	}
}
