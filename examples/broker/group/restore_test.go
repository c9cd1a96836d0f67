package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// movedGroup forms a Stable group of n members on a coordinator on store,
// closes it, and returns the members' JoinGroup answers and a coordinator
// that loaded the store, as a broker that takes the group's offsets
// partition over.
func movedGroup(t *testing.T, store *memStore, n int) ([]JoinResult, *Coordinator, interface{ Advance(time.Duration) }) {
	t.Helper()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	res := stableGroup(t, c, clk, "g", n)
	require.NoError(t, c.Close())
	again, clk2 := restartOn(t, store, epoch.Add(time.Minute))
	return res, again, clk2
}

// TestRebalanceIsStored: the leader's SyncGroup stores the group with its
// generation, protocol, leader and every member with its subscription and
// assignment.
func TestRebalanceIsStored(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	res := stableGroup(t, c, clk, "g", 2)
	sg := store.stored()
	require.Len(t, sg, 1)
	assert.Equal(t, "consumer", sg[0].ProtocolType)
	assert.Equal(t, int32(1), sg[0].Generation)
	assert.Equal(t, "range", sg[0].Protocol)
	assert.Equal(t, res[0].Leader, sg[0].Leader)
	require.Len(t, sg[0].Members, 2)
	for i, m := range sg[0].Members {
		assert.Equal(t, StoredMember{MemberID: res[i].MemberID, ClientID: "client", ClientHost: "/127.0.0.1",
			RebalanceTimeout: testRebalance, SessionTimeout: testSession,
			Subscription: []byte("meta-range"), Assignment: assignment(res[i].MemberID)}, m, "member %d", i)
	}
}

// TestMembersSurviveAMove: after a load, the members of the stored
// generation heartbeat with their ids and generation and go on, Stable,
// without a rebalance, well past their session timeout; a follower's
// SyncGroup gets its stored assignment.
func TestMembersSurviveAMove(t *testing.T) {
	store := newMemStore()
	res, c, clk := movedGroup(t, store, 2)
	for range 5 {
		for i, r := range res {
			assert.Nil(t, heartbeat(c, "g", r), "member %d goes on", i)
		}
		clk.Advance(testSession / 2)
	}
	st, members := state(t, c, "g")
	assert.Equal(t, Stable, st)
	assert.Equal(t, ids(res), members)
	got := syncGroup(c, SyncRequest{Group: "g", MemberID: res[1].MemberID, Generation: res[1].Generation}).one(t)
	require.Nil(t, got.Err)
	assert.Equal(t, assignment(res[1].MemberID), got.Assignment)
	d, _, _ := c.DescribeGroup("g")
	assert.Equal(t, "range", d.Protocol)
	assert.Equal(t, 1, store.metas, "no rebalance stored anything since")
}

// TestSessionExpiryAfterAMove: a loaded member that does not heartbeat
// the new coordinator expires within its session timeout, and the group
// rebalances into the next generation with those that did.
func TestSessionExpiryAfterAMove(t *testing.T) {
	store := newMemStore()
	res, c, clk := movedGroup(t, store, 2)
	clk.Advance(testSession / 2)
	require.Nil(t, heartbeat(c, "g", res[0]))
	clk.Advance(testSession/2 + time.Second)
	assert.Equal(t, kerr.RebalanceInProgress, heartbeat(c, "g", res[0]), "the silent member expired")
	st, members := state(t, c, "g")
	assert.Equal(t, PreparingRebalance, st)
	assert.Equal(t, []string{res[0].MemberID}, members)

	again := join(c, joinReq("g", res[0].MemberID)).one(t)
	require.Nil(t, again.Err)
	assert.Equal(t, res[0].Generation+1, again.Generation, "the next generation")
	assert.Equal(t, res[0].MemberID, again.Leader)
}

// TestStaticMemberSurvivesAMove: a static member comes back with its
// instance id; restarted, it rejoins under a new member id without a
// rebalance, and its old id is fenced.
func TestStaticMemberSurvivesAMove(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	req := joinReq("g", "")
	req.InstanceID = "i"
	a := join(c, req)
	for range 2 {
		clk.Advance(testDelay)
	}
	first := a.one(t)
	require.Nil(t, first.Err)
	syncAll(t, c, "g", []JoinResult{first})
	require.NoError(t, c.Close())
	require.Equal(t, "i", store.stored()[0].Members[0].InstanceID)

	c2, _ := restartOn(t, store, epoch.Add(time.Minute))
	d, _, _ := c2.DescribeGroup("g")
	require.Len(t, d.Members, 1)
	assert.Equal(t, "i", d.Members[0].InstanceID)
	assert.Nil(t, c2.Heartbeat(HeartbeatRequest{Group: "g", MemberID: first.MemberID, InstanceID: "i", Generation: first.Generation}))

	rejoined := join(c2, req).one(t)
	require.Nil(t, rejoined.Err)
	assert.Equal(t, first.Generation, rejoined.Generation, "no rebalance")
	assert.NotEqual(t, first.MemberID, rejoined.MemberID)
	assert.Equal(t, kerr.FencedInstanceID,
		c2.Heartbeat(HeartbeatRequest{Group: "g", MemberID: first.MemberID, InstanceID: "i", Generation: first.Generation}))
	st, _ := state(t, c2, "g")
	assert.Equal(t, Stable, st)
	assert.Equal(t, rejoined.MemberID, store.stored()[0].Members[0].MemberID, "the new id is stored")
}

// TestSyncWaitsForTheGroupRecord: the members' SyncGroups are answered
// once the group's record is durable; if it is not, they are answered
// the error Kafka maps the store's to, and the group rebalances.
func TestSyncWaitsForTheGroupRecord(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		want  *kerr.Error
		state State
	}{
		{"durable", nil, nil, Stable},
		{"timed out", kerr.RequestTimedOut, kerr.CoordinatorNotAvailable, PreparingRebalance},
		{"leadership lost", kerr.NotCoordinator, kerr.NotCoordinator, PreparingRebalance},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			store.hold = true
			c, clk := newTestCoordinator(t, WithOffsetStore(store))
			leader, follower := join(c, joinReq("g", "")), join(c, joinReq("g", ""))
			for range 2 {
				clk.Advance(testDelay)
			}
			lr, fr := leader.one(t), follower.one(t)
			require.Equal(t, lr.MemberID, lr.Leader)
			fs := syncGroup(c, SyncRequest{Group: "g", MemberID: fr.MemberID, Generation: fr.Generation})
			ls := syncGroup(c, SyncRequest{Group: "g", MemberID: lr.MemberID, Generation: lr.Generation, Assignments: []Assignment{
				{MemberID: lr.MemberID, Assignment: assignment(lr.MemberID)}, {MemberID: fr.MemberID, Assignment: assignment(fr.MemberID)}}})
			assert.Zero(t, ls.n()+fs.n(), "not answered before the group's record is durable")
			st, _ := state(t, c, "g")
			assert.Equal(t, CompletingRebalance, st)

			store.release(0, tt.err)
			l, f := ls.one(t), fs.one(t)
			assert.Equal(t, tt.want, l.Err)
			assert.Equal(t, tt.want, f.Err)
			if tt.want == nil {
				assert.Equal(t, assignment(fr.MemberID), f.Assignment)
			}
			st, _ = state(t, c, "g")
			assert.Equal(t, tt.state, st)
		})
	}
	t.Run("refused", func(t *testing.T) {
		store := newMemStore()
		c, clk := newTestCoordinator(t, WithOffsetStore(store))
		a := join(c, joinReq("g", ""))
		for range 2 {
			clk.Advance(testDelay)
		}
		r := a.one(t)
		store.failWith(kerr.CoordinatorNotAvailable)
		got := syncGroup(c, SyncRequest{Group: "g", MemberID: r.MemberID, Generation: r.Generation}).one(t)
		assert.Equal(t, kerr.CoordinatorNotAvailable, got.Err)
		st, _ := state(t, c, "g")
		assert.Equal(t, PreparingRebalance, st)
	})
}

// TestEmptyGroupIsStored: a group whose members all left is stored Empty,
// and comes back Empty with its generation.
func TestEmptyGroupIsStored(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	res := stableGroup(t, c, clk, "g", 1)
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", res[0].MemberID, res[0].Generation, 10))
	_, errs := c.LeaveGroup("g", []MemberIdentity{{MemberID: res[0].MemberID}})
	require.Equal(t, []*kerr.Error{nil}, errs)
	sg := store.stored()[0]
	assert.Empty(t, sg.Members)
	assert.Equal(t, int32(2), sg.Generation)
	require.NoError(t, c.Close())

	again, _ := restartOn(t, store, epoch)
	st, members := state(t, again, "g")
	assert.Equal(t, Empty, st)
	assert.Empty(t, members)
	assert.Equal(t, []int64{10}, fetch(t, again, "g", 1))
}
