package consumergroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/timer"
)

// A second member's arrival walks the group through KIP-848's incremental
// handover: the first member is told to revoke half of its partitions at
// its old epoch, the newcomer waits for them at the new one, and neither
// holds a partition the other has.
func TestIncrementalHandover(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics)

	r1 := join(t, c, "g", "m1", "t")
	assert.Equal(t, int32(1), r1.MemberEpoch, "the first member takes the group's first epoch")
	assert.Equal(t, parts(tp, 0, 1, 2, 3), r1.Assignment, "alone, it gets every partition")

	r2 := join(t, c, "g", "m2", "t")
	assert.Equal(t, int32(2), r2.MemberEpoch, "the newcomer is at the new target's epoch")
	assert.Equal(t, Assignment{}, r2.Assignment, "its partitions are still m1's")
	d, _ := c.Describe("g")
	assert.Equal(t, Reconciling, d.State)
	assert.Equal(t, int32(2), d.Epoch)

	r1, err := beat(t, c, "g", "m1", 1, parts(tp, 0, 1, 2, 3))
	require.Nil(t, err)
	assert.Equal(t, int32(1), r1.MemberEpoch, "revoking: the epoch stays until it has")
	kept := r1.Assignment
	assert.Equal(t, 2, kept.count(), "told to keep half")

	r2, err = beat(t, c, "g", "m2", 2, Assignment{})
	require.Nil(t, err)
	assert.Equal(t, Assignment{}, r2.Assignment, "nothing is free before m1 revokes")

	r1, err = beat(t, c, "g", "m1", 1, kept)
	require.Nil(t, err)
	assert.Equal(t, int32(2), r1.MemberEpoch, "revoked: it takes the new epoch")

	r2, err = beat(t, c, "g", "m2", 2, Assignment{})
	require.Nil(t, err)
	assert.Equal(t, 2, r2.Assignment.count(), "the released half")
	assert.False(t, r2.Assignment.overlaps(kept), "no partition owned twice")
	d, _ = c.Describe("g")
	assert.Equal(t, Stable, d.State)
}

// A member's session is a timer task moved by each heartbeat: one that
// stops heartbeating is removed when it fires, and the others take its
// partitions at a new epoch.
func TestSessionTimeout(t *testing.T) {
	c, clk, tp := handingOver(t)
	var err *kerr.Error

	// m1 heartbeats every second for longer than a session; m2 does not.
	for range 15 {
		clk.Advance(testHeartbeat)
		_, err = keepAlive(t, c, "g", "m1", 1)
		if err != nil {
			_, err = keepAlive(t, c, "g", "m1", 2)
		}
		require.Nil(t, err, "a heartbeating member keeps its session")
	}
	_, err = keepAlive(t, c, "g", "m2", 2)
	assert.Equal(t, kerr.UnknownMemberID, err, "m2's session expired")
	d, _ := c.Describe("g")
	require.Len(t, d.Members, 1)
	r, err := beat(t, c, "g", "m1", d.Members[0].MemberEpoch, parts(tp, d.Members[0].Assignment[tp.ID]...))
	require.Nil(t, err)
	assert.Equal(t, parts(tp, 0, 1), r.Assignment, "m1 takes every partition back")
	assert.Equal(t, int32(3), r.MemberEpoch, "at the epoch m2's removal bumped")
}

// handingOver returns a coordinator with group "g" of a topic of two
// partitions: m1 had both and has just been told to revoke one for m2,
// which waits for it at epoch 2.
func handingOver(t *testing.T) (*Coordinator, *timer.ManualClock, TopicMeta) {
	t.Helper()
	topics := newFakeTopics()
	tp := topics.set("t", 2)
	c, clk := newTestCoordinator(t, topics)
	join(t, c, "g", "m1", "t")
	join(t, c, "g", "m2", "t")
	r, err := beat(t, c, "g", "m1", 1, parts(tp, 0, 1))
	require.Nil(t, err)
	require.Equal(t, int32(1), r.MemberEpoch, "told to revoke")
	require.Equal(t, 1, r.Assignment.count(), "keeps one")
	return c, clk, tp
}

// A member told to revoke that does not within its rebalance timeout is
// fenced, though it keeps heartbeating.
func TestRebalanceTimeout(t *testing.T) {
	c, clk, tp := handingOver(t)

	var fenced *kerr.Error
	for elapsed := time.Duration(0); elapsed <= testRebalance && fenced == nil; elapsed += testHeartbeat {
		clk.Advance(testHeartbeat)
		_, fenced = beat(t, c, "g", "m1", 1, parts(tp, 0, 1)) // still holds both
		_, _ = keepAlive(t, c, "g", "m2", 2)
	}
	assert.Equal(t, kerr.UnknownMemberID, fenced, "fenced at its rebalance timeout")
	r, err := beat(t, c, "g", "m2", 2, Assignment{})
	require.Nil(t, err)
	assert.Equal(t, parts(tp, 0, 1), r.Assignment, "m2 takes everything once m1 is out")
}

// Leaving (-1) frees a member's partitions at once; a static member's
// leave for now (-2) keeps them for its instance, which takes them back
// under a new member id at the same epoch: no rebalance.
func TestLeaveAndStaticMembers(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 2)
	c, _ := newTestCoordinator(t, topics)

	static := func(member string, epoch int32, owned Assignment) (HeartbeatResponse, *kerr.Error) {
		req := HeartbeatRequest{Version: 1, Group: "g", MemberID: member, MemberEpoch: epoch, InstanceID: "i1",
			RebalanceTimeout: -1, Owned: owned}
		if epoch == JoinEpoch {
			req.SubscribedNames, req.RebalanceTimeout = []string{"t"}, 1000
		}
		resp, err, _ := heartbeat(c, req)
		return resp, err
	}
	r, err := static("s1", JoinEpoch, Assignment{})
	require.Nil(t, err)
	require.Equal(t, parts(tp, 0, 1), r.Assignment)

	_, err = static("s2", JoinEpoch, Assignment{})
	assert.Equal(t, kerr.UnreleasedInstanceID, err, "the instance is still s1's")

	r, err = static("s1", StaticLeaveEpoch, nil)
	require.Nil(t, err)
	assert.Equal(t, int32(StaticLeaveEpoch), r.MemberEpoch)
	_, err = static("s1", 1, nil)
	assert.Equal(t, kerr.FencedMemberEpoch, err, "a static member that left joins again")
	before, _ := c.Describe("g")

	r, err = static("s2", JoinEpoch, Assignment{})
	require.Nil(t, err)
	assert.Equal(t, parts(tp, 0, 1), r.Assignment, "s2 takes s1's partitions")
	assert.Equal(t, int32(1), r.MemberEpoch, "at s1's epoch")
	after, _ := c.Describe("g")
	assert.Equal(t, before.Epoch, after.Epoch, "no new group epoch")
	_, err = static("s1", 1, nil)
	assert.Equal(t, kerr.FencedInstanceID, err, "s1 is replaced")

	join(t, c, "g", "d1", "t")
	r, err = keepAlive(t, c, "g", "d1", 2)
	require.Nil(t, err)
	r, err = c.heartbeatLeave("g", "d1")
	require.Nil(t, err)
	assert.Equal(t, int32(LeaveEpoch), r.MemberEpoch)
	_, err = keepAlive(t, c, "g", "d1", 2)
	assert.Equal(t, kerr.UnknownMemberID, err, "d1 left")
}

// heartbeatLeave is a dynamic member's leave.
func (c *Coordinator) heartbeatLeave(group, member string) (HeartbeatResponse, *kerr.Error) {
	resp, err, _ := heartbeat(c, HeartbeatRequest{Version: 1, Group: group, MemberID: member, MemberEpoch: LeaveEpoch, RebalanceTimeout: -1})
	return resp, err
}

// Epochs a member may send: its own; the one before, with no more
// partitions than it is assigned (its last answer was lost); never one
// ahead.
func TestMemberEpochFencing(t *testing.T) {
	c, _, tp := handingOver(t)
	_, err := beat(t, c, "g", "m1", 5, parts(tp, 0, 1))
	assert.Equal(t, kerr.FencedMemberEpoch, err, "an epoch ahead")
	kept := assignedTo(t, c, "m1")
	r, err := beat(t, c, "g", "m1", 1, kept)
	require.Nil(t, err)
	require.Equal(t, int32(2), r.MemberEpoch)
	_, err = beat(t, c, "g", "m1", 1, kept)
	assert.Nil(t, err, "the epoch before, owning what it is assigned: its answer was lost")
	_, err = beat(t, c, "g", "m1", 1, parts(tp, 0, 1))
	assert.Equal(t, kerr.FencedMemberEpoch, err, "the epoch before, owning more than assigned")
	_, err = keepAlive(t, c, "g", "nobody", 1)
	assert.Equal(t, kerr.UnknownMemberID, err)
}

// assignedTo returns what the group's member is assigned now.
func assignedTo(t *testing.T, c *Coordinator, member string) Assignment {
	t.Helper()
	d, ok := c.Describe("g")
	require.True(t, ok)
	for _, m := range d.Members {
		if m.MemberID == member {
			return m.Assignment
		}
	}
	t.Fatalf("no member %s", member)
	return nil
}

// The coordinator resolves regular expressions against the topics, and a
// topic created or grown later bumps the group epoch and is assigned.
func TestRegexAndTopicChanges(t *testing.T) {
	topics := newFakeTopics()
	foo1 := topics.set("foo1", 1)
	topics.set("bar", 1)
	c, _ := newTestCoordinator(t, topics)
	re := "foo.*"
	resp, err, msg := heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "m1", MemberEpoch: JoinEpoch,
		RebalanceTimeout: 1000, SubscribedRegex: &re, Owned: Assignment{}})
	require.Nil(t, err, msg)
	assert.Equal(t, parts(foo1, 0), resp.Assignment, "the regex matches whole names: foo1, not bar")

	foo2 := topics.set("foo2", 2)
	r, err := beat(t, c, "g", "m1", resp.MemberEpoch, resp.Assignment)
	require.Nil(t, err)
	assert.Equal(t, resp.MemberEpoch+1, r.MemberEpoch, "a new matching topic bumps the epoch")
	assert.Equal(t, Assignment{foo1.ID: {0}, foo2.ID: {0, 1}}, r.Assignment)

	topics.set("foo1", 3)
	r, err = beat(t, c, "g", "m1", r.MemberEpoch, r.Assignment)
	require.Nil(t, err)
	assert.Equal(t, Assignment{foo1.ID: {0, 1, 2}, foo2.ID: {0, 1}}, r.Assignment, "new partitions are assigned")

	bad := "("
	_, err, _ = heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "m2", MemberEpoch: JoinEpoch,
		RebalanceTimeout: 1000, SubscribedRegex: &bad, Owned: Assignment{}})
	assert.Equal(t, kerr.InvalidRegularExpression, err)
}

func TestInvalidHeartbeats(t *testing.T) {
	topics := newFakeTopics()
	c, _ := newTestCoordinator(t, topics)
	uniform, nope := "uniform", "nope"
	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want *kerr.Error
	}{
		{"no group", HeartbeatRequest{Version: 1, MemberID: "m", RebalanceTimeout: 1, SubscribedNames: []string{}}, kerr.InvalidRequest},
		{"v1 needs a member id", HeartbeatRequest{Version: 1, Group: "g", RebalanceTimeout: 1, SubscribedNames: []string{}}, kerr.InvalidRequest},
		{"a join without rebalance timeout", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeout: -1, SubscribedNames: []string{}}, kerr.InvalidRequest},
		{"a join without subscription", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeout: 1}, kerr.InvalidRequest},
		{"a join that owns partitions", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeout: 1, SubscribedNames: []string{}, Owned: Assignment{{1}: {0}}}, kerr.InvalidRequest},
		{"an unknown assignor", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeout: 1, SubscribedNames: []string{}, ServerAssignor: &nope}, kerr.UnsupportedAssignor},
		{"a static leave without instance", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", MemberEpoch: StaticLeaveEpoch}, kerr.InvalidRequest},
		{"a leave of an unknown group", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", MemberEpoch: LeaveEpoch}, kerr.GroupIDNotFound},
		{"a heartbeat to an unknown group", HeartbeatRequest{Version: 1, Group: "g", MemberID: "m", MemberEpoch: 3}, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, _ := heartbeat(c, tc.req)
			assert.Equal(t, tc.want, err)
		})
	}
	resp, err, _ := heartbeat(c, HeartbeatRequest{Version: 0, Group: "g", RebalanceTimeout: 1, SubscribedNames: []string{}, ServerAssignor: &uniform})
	require.Nil(t, err)
	assert.NotEmpty(t, resp.MemberID, "v0: the coordinator names the member")
}

// Offset commits and fetches carry the member's epoch (KIP-848): only
// the current one is taken; a group without members takes anonymous
// commits.
func TestOffsetValidation(t *testing.T) {
	topics := newFakeTopics()
	topics.set("t", 2)
	c, _ := newTestCoordinator(t, topics)
	ok, err, _ := c.ValidateCommit("g", "", -1)
	assert.False(t, ok, "not a consumer group: the classic coordinator decides")
	assert.Nil(t, err)
	join(t, c, "g", "m1", "t")
	for _, tc := range []struct {
		name   string
		member string
		epoch  int32
		want   *kerr.Error
	}{
		{"current epoch", "m1", 1, nil},
		{"stale epoch", "m1", 0, kerr.StaleMemberEpoch},
		{"unknown member", "m9", 1, kerr.UnknownMemberID},
		{"anonymous while the group has members", "", -1, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err, check := c.ValidateCommit("g", tc.member, tc.epoch)
			assert.True(t, ok)
			if check != nil {
				err = check("t", 0)
			}
			assert.Equal(t, tc.want, err)
		})
	}
	_, err, _ = c.ValidateTxnCommit("g", "", "", -1)
	assert.Nil(t, err, "a transactional commit that names no member (before v3)")
	_, _, check := c.ValidateTxnCommit("g", "m1", "", 0)
	assert.Equal(t, kerr.StaleMemberEpoch, check("t", 0), "one that does is checked")
	_, err = c.ValidateFetch("g", "", -1)
	assert.Nil(t, err, "the admin's fetch")
	_, err = c.ValidateFetch("g", "m1", 0)
	assert.Equal(t, kerr.StaleMemberEpoch, err)

	assert.Equal(t, []*kerr.Error{kerr.NonEmptyGroup}, c.Delete([]string{"g"}))
	_, err = c.heartbeatLeave("g", "m1")
	require.Nil(t, err)
	_, err, _ = c.ValidateCommit("g", "", -1)
	assert.Nil(t, err, "an empty group takes the admin's commit")
	assert.Equal(t, []*kerr.Error{nil}, c.Delete([]string{"g"}))
	assert.False(t, c.Has("g"))
}

// A coordinator creates only the groups it owns: a join racing the unload
// of its partition is told to find its coordinator again.
func TestOwnerAndUnload(t *testing.T) {
	topics := newFakeTopics()
	topics.set("t", 1)
	owned := true
	c, clk := newTestCoordinator(t, topics, WithOwner(func(string) bool { return owned }))
	join(t, c, "g", "m1", "t")
	assert.Equal(t, 1, c.Unload(func(g string) bool { return g == "g" }))
	assert.False(t, c.Has("g"), "unloaded")
	owned = false
	_, err, _ := heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "m1", MemberEpoch: JoinEpoch,
		RebalanceTimeout: 1000, SubscribedNames: []string{"t"}, Owned: Assignment{}})
	assert.Equal(t, kerr.NotCoordinator, err)
	clk.Advance(2 * testSession) // the unloaded member's session task runs without effect
	assert.Empty(t, c.List())
}

// A commit at an older member epoch is taken for the partitions the
// member held at that epoch (KIP-1251): those it kept, not those it gave
// up nor those it got since.
func TestCommitAtOlderEpoch(t *testing.T) {
	c, _, tp := handingOver(t) // m1 at epoch 1 keeps one partition of two
	kept := assignedTo(t, c, "m1")[tp.ID][0]
	given := 1 - kept
	r, err := beat(t, c, "g", "m1", 1, parts(tp, kept))
	require.Nil(t, err)
	require.Equal(t, int32(2), r.MemberEpoch, "revoked: at the new epoch")

	_, err, check := c.ValidateCommit("g", "m1", 1)
	require.Nil(t, err)
	require.NotNil(t, check, "an older epoch is checked by partition")
	assert.Nil(t, check("t", kept), "held since epoch 1")
	assert.Equal(t, kerr.StaleMemberEpoch, check("t", given), "given up")
	assert.Equal(t, kerr.StaleMemberEpoch, check("nope", 0), "an unknown topic")
	_, err, _ = c.ValidateCommit("g", "m1", 3)
	assert.Equal(t, kerr.StaleMemberEpoch, err, "an epoch ahead of the member's")
	_, err, check = c.ValidateCommit("g", "m1", 2)
	assert.Nil(t, err)
	assert.Nil(t, check, "the current epoch: taken whole")

	r, err = beat(t, c, "g", "m2", 2, Assignment{})
	require.Nil(t, err)
	require.Equal(t, parts(tp, given), r.Assignment)
	_, _, check = c.ValidateCommit("g", "m2", 1)
	require.NotNil(t, check)
	assert.Equal(t, kerr.StaleMemberEpoch, check("t", given), "m2 got it at epoch 2, not 1")
}
