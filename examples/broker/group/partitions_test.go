package group

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func simpleCommit(offset int64) CommitRequest {
	return CommitRequest{Group: "g", Generation: -1, Retention: -1,
		Offsets: []CommitOffset{{Topic: "t", Partition: 0, Offset: offset, LeaderEpoch: -1}}}
}

// TestPendingCommits: with a store whose commits wait for replication, a
// commit is answered, and its offset visible to OffsetFetch, only once
// the store says it is durable; a failed one (the store's
// REQUEST_TIMED_OUT, a leadership lost) is answered with the store's
// error and leaves the committed offset as it was. Kafka's pending offset
// commits.
func TestPendingCommits(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want *kerr.Error
		next int64 // committed after the wait
	}{
		{"durable", nil, nil, 2},
		{"timed out", kerr.RequestTimedOut, kerr.CoordinatorNotAvailable, 1}, // Kafka 4's answer, which clients retry
		{"leadership lost", kerr.NotCoordinator, kerr.NotCoordinator, 1},
		{"another error", assert.AnError, kerr.NotCoordinator, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			c, _ := newTestCoordinator(t, WithOffsetStore(store))
			require.Equal(t, []*kerr.Error{nil}, commitNow(t, c, simpleCommit(1)))
			store.hold = true
			a := new(answers[[]*kerr.Error])
			c.CommitOffsets(simpleCommit(2), a.respond)
			assert.Zero(t, a.n(), "not answered before it is durable")
			assert.Equal(t, []int64{1}, fetch(t, c, "g", 1), "a pending commit is not visible")
			store.release(0, tt.err)
			assert.Equal(t, []*kerr.Error{tt.want}, a.one(t))
			assert.Equal(t, []int64{tt.next}, fetch(t, c, "g", 1))
		})
	}
}

// TestPendingCommitsApplyInLogOrder: two commits of a partition appended
// in turn and made durable in the other order leave the later one's
// offset, as a replay of the partition would; an older one durable after
// a newer one failed is applied; one deleted while pending is not brought
// back when it becomes durable.
func TestPendingCommitsApplyInLogOrder(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	store.hold = true
	first, second := new(answers[[]*kerr.Error]), new(answers[[]*kerr.Error])
	c.CommitOffsets(simpleCommit(5), first.respond)
	c.CommitOffsets(simpleCommit(6), second.respond)
	store.release(1, nil)
	store.release(0, nil)
	assert.Equal(t, []*kerr.Error{nil}, first.one(t))
	assert.Equal(t, []*kerr.Error{nil}, second.one(t))
	assert.Equal(t, []int64{6}, fetch(t, c, "g", 1), "the later commit wins")

	// An older commit durable after a newer one failed is applied: it was
	// acknowledged.
	fourth, fifth := new(answers[[]*kerr.Error]), new(answers[[]*kerr.Error])
	c.CommitOffsets(simpleCommit(8), fourth.respond)
	c.CommitOffsets(simpleCommit(9), fifth.respond)
	store.release(3, kerr.RequestTimedOut)
	store.release(2, nil)
	assert.Equal(t, []*kerr.Error{kerr.CoordinatorNotAvailable}, fifth.one(t))
	assert.Equal(t, []*kerr.Error{nil}, fourth.one(t))
	assert.Equal(t, []int64{8}, fetch(t, c, "g", 1), "what the client was told is committed")

	third := new(answers[[]*kerr.Error])
	c.CommitOffsets(simpleCommit(7), third.respond)
	gerr, _ := c.DeleteOffsets("g", []TopicPartition{{"t", 0}})
	require.Nil(t, gerr)
	store.release(4, nil)
	assert.Equal(t, []*kerr.Error{nil}, third.one(t))
	assert.Equal(t, []int64{-1}, fetch(t, c, "g", 1), "deleted after it was appended: the tombstone is later in the log")
}

// TestUnload: a coordinator that stops owning a group's partition unloads
// it: a JoinGroup waiting in a rebalance and a follower's SyncGroup
// waiting for the leader's are answered NOT_COORDINATOR at once, the
// group is gone, and, no longer owned, it is not created again.
func TestUnload(t *testing.T) {
	var owned atomic.Bool
	owned.Store(true)
	c, clk := newTestCoordinator(t, WithOwner(func(string) bool { return owned.Load() }))
	otherGroup := stableGroup(t, c, clk, "h", 2)
	// h's follower waits for its leader's SyncGroup in a new generation.
	rejoin := []*answers[JoinResult]{join(c, joinReq("h", otherGroup[0].MemberID)), join(c, joinReq("h", otherGroup[1].MemberID))}
	hres := []JoinResult{rejoin[0].one(t), rejoin[1].one(t)}
	follower := hres[0]
	if follower.MemberID == follower.Leader {
		follower = hres[1]
	}
	syncing := syncGroup(c, SyncRequest{Group: "h", MemberID: follower.MemberID, Generation: follower.Generation})
	require.Zero(t, syncing.n())

	res := stableGroup(t, c, clk, "g", 2)
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", res[0].MemberID, res[0].Generation, 10))
	// A third member's join starts a rebalance: it waits.
	joining := join(c, joinReq("g", ""))
	require.Zero(t, joining.n(), "waiting in the rebalance")

	owned.Store(false)
	assert.Equal(t, 2, c.Unload(func(g string) bool { return g == "g" || g == "h" }))
	got := joining.one(t)
	assert.Equal(t, kerr.NotCoordinator, got.Err, "the waiting JoinGroup")
	assert.Equal(t, kerr.NotCoordinator, syncing.one(t).Err, "the waiting SyncGroup")
	_, found, _ := c.DescribeGroup("g")
	assert.False(t, found, "unloaded")
	assert.Equal(t, []*kerr.Error{kerr.NotCoordinator}, commitNow(t, c, simpleCommit(1)), "not created again")
	clk.Advance(time.Hour) // the unloaded groups' sessions and waits end without effect
	for name, size := range c.PurgatorySizes() {
		assert.Zero(t, size.Pending, "%s: nothing left waiting", name)
	}
}
