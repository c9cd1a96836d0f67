package consumergroup

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is a Store that applies each change at once, as a replay of
// its records would: the latest record of each group and member wins,
// tombstones remove.
type memStore struct {
	mu      sync.Mutex
	groups  map[string]*StoredGroup
	members map[string]map[string]StoredMember
	appends int
	refuse  int      // how many appends to come are refused (NOT_ENOUGH_REPLICAS)
	changes []Change // the appends taken, in order
}

func newMemStore() *memStore {
	return &memStore{groups: map[string]*StoredGroup{}, members: map[string]map[string]StoredMember{}}
}

func (s *memStore) Append(ch Change) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse > 0 {
		s.refuse--
		return nil, kerr.NotEnoughReplicas
	}
	s.appends++
	s.changes = append(s.changes, ch)
	if ch.Meta != nil {
		m := *ch.Meta
		s.groups[ch.Group] = &m
	}
	if s.members[ch.Group] == nil {
		s.members[ch.Group] = map[string]StoredMember{}
	}
	for _, sm := range ch.Members {
		s.members[ch.Group][sm.MemberID] = sm
	}
	for _, id := range ch.Removed {
		delete(s.members[ch.Group], id)
	}
	if ch.Deleted {
		delete(s.groups, ch.Group)
		delete(s.members, ch.Group)
	}
	return func(done func(error)) { done(nil) }, nil
}

// replay returns the groups stored, as a load gets them.
func (s *memStore) replay() []StoredGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoredGroup
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		sg := *s.groups[name]
		for _, id := range slices.Sorted(maps.Keys(s.members[name])) {
			sg.Members = append(sg.Members, s.members[name][id])
		}
		out = append(out, sg)
	}
	return out
}

func (s *memStore) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.appends }

// snapshot returns group g's members as a store keeps them, with their
// reconciliation states, and its metadata.
func snapshot(t *testing.T, c *Coordinator, name string) (StoredGroup, map[string]memberState) {
	t.Helper()
	g := c.lookup(name, false)
	require.NotNil(t, g, "group %s", name)
	g.mu.Lock()
	defer g.mu.Unlock()
	sg := g.storedMetaLocked()
	states := map[string]memberState{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		sg.Members = append(sg.Members, g.storedLocked(g.members[id]))
		states[id] = g.members[id].state
	}
	return sg, states
}

// TestStoreReplay checks that a group written to a store and loaded into
// a fresh coordinator is what was there (members, epochs, partitions
// assigned and pending revocation, targets, states, static members), that
// its members go on at the same epochs without a rebalance, and that the
// loaded members' sessions and rebalance timeouts run again.
func TestStoreReplay(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	store := newMemStore()
	c1, _ := newTestCoordinator(t, topics, WithStore(store))
	join(t, c1, "g", "m1", "t")
	r, err, msg := heartbeat(c1, HeartbeatRequest{Version: 1, Group: "g", MemberID: "s1", MemberEpoch: JoinEpoch,
		InstanceID: "i1", RackID: ptr("r1"), RebalanceTimeout: 5000, SubscribedRegex: ptr("t.*"),
		ServerAssignor: ptr("range"), Owned: Assignment{}, ClientID: "cl", ClientHost: "/127.0.0.1"})
	require.Nil(t, err, msg)
	require.Equal(t, int32(2), r.MemberEpoch)
	r, err = beat(t, c1, "g", "m1", 1, parts(tp, 0, 1, 2, 3))
	require.Nil(t, err)
	require.Equal(t, int32(1), r.MemberEpoch, "m1 is told to revoke")

	before, beforeStates := snapshot(t, c1, "g")
	require.Contains(t, beforeStates, "m1")
	require.Equal(t, unrevokedPartitions, beforeStates["m1"], "m1 must revoke")
	require.Equal(t, unreleasedPartitions, beforeStates["s1"], "s1 waits for them")
	d1, _ := c1.Describe("g")

	stored := store.replay()
	require.Len(t, stored, 1)
	assert.Equal(t, before, stored[0], "the store has the group as it is")

	c2, clk2 := newTestCoordinator(t, topics, WithStore(store))
	n, lerr := c2.Load(stored)
	require.NoError(t, lerr)
	require.Equal(t, 1, n)
	after, afterStates := snapshot(t, c2, "g")
	assert.Equal(t, before, after, "loaded as stored")
	assert.Equal(t, beforeStates, afterStates, "each member in its reconciliation state")
	d2, _ := c2.Describe("g")
	assert.Equal(t, d1, d2, "described alike")

	appends := store.count()
	r, err = beat(t, c2, "g", "m1", 1, parts(tp, 0, 1))
	require.Nil(t, err, "m1 goes on at its epoch")
	assert.Equal(t, int32(2), r.MemberEpoch, "revoked, it reaches the target's epoch")
	r, err = beat(t, c2, "g", "s1", 2, Assignment{})
	require.Nil(t, err, "s1 goes on at its epoch")
	assert.Equal(t, 2, r.Assignment.count(), "s1 takes what m1 gave up")
	d, _ := c2.Describe("g")
	assert.Equal(t, d1.Epoch, d.Epoch, "no new group epoch: no rebalance")
	assert.Equal(t, Stable, d.State)
	assert.Greater(t, store.count(), appends, "the members' steps are written")

	// The loaded sessions run: a member that stops heartbeating expires.
	epoch := int32(2)
	for range 12 {
		clk2.Advance(testHeartbeat)
		r, err = keepAlive(t, c2, "g", "m1", epoch)
		require.Nil(t, err)
		epoch = r.MemberEpoch // s1's removal moves m1 on
	}
	_, err = keepAlive(t, c2, "g", "s1", 2)
	assert.Equal(t, kerr.UnknownMemberID, err, "s1's session expired")
	stored = store.replay()
	require.Len(t, stored, 1)
	require.Len(t, stored[0].Members, 1, "its tombstone is written")
	assert.Equal(t, "m1", stored[0].Members[0].MemberID)
	assert.Equal(t, d1.Epoch+1, stored[0].Epoch, "with the epoch its removal bumped")

	_, err = c2.heartbeatLeave("g", "m1")
	require.Nil(t, err)
	assert.Empty(t, store.replay()[0].Members, "m1 left")
	require.Equal(t, []*kerr.Error{nil}, c2.Delete([]string{"g"}))
	assert.Empty(t, store.replay(), "the group's tombstone is written")
}

// TestStoreReplayRebalanceTimeout checks that a loaded member that must
// revoke partitions has its rebalance timeout again: fenced if it does
// not revoke within it.
func TestStoreReplayRebalanceTimeout(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 2)
	store := newMemStore()
	c1, _ := newTestCoordinator(t, topics, WithStore(store))
	join(t, c1, "g", "m1", "t")
	join(t, c1, "g", "m2", "t")
	_, err := beat(t, c1, "g", "m1", 1, parts(tp, 0, 1))
	require.Nil(t, err)

	c2, clk := newTestCoordinator(t, topics, WithStore(store))
	_, lerr := c2.Load(store.replay())
	require.NoError(t, lerr)
	var fenced *kerr.Error
	for elapsed := time.Duration(0); elapsed <= testRebalance && fenced == nil; elapsed += testHeartbeat {
		clk.Advance(testHeartbeat)
		_, fenced = beat(t, c2, "g", "m1", 1, parts(tp, 0, 1)) // still holds both
		_, _ = keepAlive(t, c2, "g", "m2", 2)
	}
	assert.Equal(t, kerr.UnknownMemberID, fenced, "fenced at its rebalance timeout")
}

// TestStoreWritesOnlyChanges checks that a heartbeat that changes nothing
// writes nothing.
func TestStoreWritesOnlyChanges(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 2)
	store := newMemStore()
	c, _ := newTestCoordinator(t, topics, WithStore(store))
	join(t, c, "g", "m1", "t")
	_, err := beat(t, c, "g", "m1", 1, parts(tp, 0, 1))
	require.Nil(t, err)
	n := store.count()
	for range 3 {
		_, err = keepAlive(t, c, "g", "m1", 1)
		require.Nil(t, err)
	}
	assert.Equal(t, n, store.count(), "nothing changed, nothing written")
}

// TestStoreRetargetWritesMovedMembers checks that a join writes the
// group's metadata, the newcomer and the members whose target it moved,
// and no other member: the others' records did not change.
func TestStoreRetargetWritesMovedMembers(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 6)
	store := newMemStore()
	c, _ := newTestCoordinator(t, topics, WithStore(store))
	settle(t, c, tp, "m1", "m2", "m3")
	before, _ := snapshot(t, c, "g")

	join(t, c, "g", "m4", "t")
	after, _ := snapshot(t, c, "g")
	var moved []string
	for i, sm := range before.Members {
		if !sm.Target.equal(after.Members[i].Target) {
			moved = append(moved, sm.MemberID)
		}
	}
	require.NotEmpty(t, moved, "the newcomer's partitions come from others")
	require.Less(t, len(moved), 3, "a sticky assignor moves only what it must")
	last := store.changes[len(store.changes)-1]
	require.NotNil(t, last.Meta, "the new epochs are written")
	var written []string
	for _, sm := range last.Members {
		written = append(written, sm.MemberID)
	}
	assert.Equal(t, append(moved, "m4"), written, "the moved members' targets and the newcomer, by id")
	assert.Equal(t, after, store.replay()[0], "the store has the group as it is")
}

// TestStoreRefusedTargetWrittenLater checks that the targets of a join
// whose append was refused are written with the group's next change,
// though the members they moved do not heartbeat meanwhile.
func TestStoreRefusedTargetWrittenLater(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 6)
	store := newMemStore()
	c, _ := newTestCoordinator(t, topics, WithStore(store))
	settle(t, c, tp, "m1", "m2", "m3")

	store.mu.Lock()
	store.refuse = 1
	store.mu.Unlock()
	_, err, _ := heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "m4", MemberEpoch: JoinEpoch,
		RebalanceTimeout: int32(testRebalance / time.Millisecond), SubscribedNames: []string{"t"}, Owned: Assignment{}})
	require.Equal(t, kerr.CoordinatorNotAvailable, err, "the join's append is refused")

	// m1 heartbeats; m2 and m3, whose targets may have moved, do not.
	d, _ := c.Describe("g")
	_, err = keepAlive(t, c, "g", "m1", d.Members[0].MemberEpoch)
	require.Nil(t, err)
	now, _ := snapshot(t, c, "g")
	assert.Equal(t, now, store.replay()[0], "every member's record is written again after a refusal")
}

// settle joins members to group "g" on topic tp and heartbeats them until
// each holds its target at the target's epoch.
func settle(t *testing.T, c *Coordinator, tp TopicMeta, members ...string) {
	t.Helper()
	for _, m := range members {
		join(t, c, "g", m, tp.Name)
	}
	for range 2 * len(members) {
		d, _ := c.Describe("g")
		if d.State == Stable {
			return
		}
		for _, dm := range d.Members {
			_, err := beat(t, c, "g", dm.MemberID, dm.MemberEpoch, dm.Assignment)
			require.Nil(t, err)
		}
	}
	d, _ := c.Describe("g")
	require.Equal(t, Stable, d.State, "the group settles")
}

func ptr[T any](v T) *T { return &v }
