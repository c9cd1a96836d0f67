package sharegroup

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// logStore is a Store that keeps the changes appended, in order, as a
// partition's log would, and replays them as a new coordinator's load
// does: the latest record of each group and member wins, tombstones
// remove. While held, the waits it returns are kept until release.
type logStore struct {
	mu      sync.Mutex
	log     []Change
	held    bool
	waiting []func(error)
}

func (s *logStore) Append(ch Change) (groupstore.Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, ch)
	return func(done func(error)) {
		s.mu.Lock()
		if s.held {
			s.waiting = append(s.waiting, done)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		done(nil)
	}, nil
}

// release ends the waits held with err.
func (s *logStore) release(err error) {
	s.mu.Lock()
	w := s.waiting
	s.waiting, s.held = nil, false
	s.mu.Unlock()
	for _, done := range w {
		done(err)
	}
}

// replay returns the groups the log adds up to.
func (s *logStore) replay() []StoredGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	metas := map[string]StoredGroup{}
	members := map[string]map[string]StoredMember{}
	for _, ch := range s.log {
		if members[ch.Group] == nil {
			members[ch.Group] = map[string]StoredMember{}
		}
		if ch.Meta != nil {
			metas[ch.Group] = *ch.Meta
		}
		for _, sm := range ch.Members {
			members[ch.Group][sm.MemberID] = sm
		}
		for _, id := range ch.Removed {
			delete(members[ch.Group], id)
		}
		if ch.Deleted {
			delete(metas, ch.Group)
			delete(members, ch.Group)
		}
	}
	var out []StoredGroup
	for _, name := range slices.Sorted(maps.Keys(metas)) {
		sg := metas[name]
		for _, id := range slices.Sorted(maps.Keys(members[name])) {
			sg.Members = append(sg.Members, members[name][id])
		}
		out = append(out, sg)
	}
	return out
}

func withStore(s Store) func(*Config) { return func(c *Config) { c.Store = s } }

// TestStoreReplaysMembersAtTheirEpochs: every change of a share group is
// written, and a coordinator that loads what was written has the same
// group at the same epochs, its members with their ids, subscriptions and
// assignments; a member that heartbeats there goes on at its epoch, one
// that leaves is a tombstone, one that never comes back is removed once
// its session (started afresh by the load) expires, and a group deleted
// is gone from the log.
func TestStoreReplaysMembersAtTheirEpochs(t *testing.T) {
	st := &logStore{}
	h := newHarness(t, withStore(st))
	h.join(t, "m1", "a", "b")
	h.join(t, "m2", "a")
	h.join(t, "m3", "b")
	_, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 1})
	require.NoError(t, err, "m1 catches up with the group epoch")
	before, ok := h.c.Describe("g")
	require.True(t, ok)

	loaded := st.replay()
	require.Len(t, loaded, 1)
	other := newHarness(t, withStore(st))
	other.c.Load(loaded)
	after, ok := other.c.Describe("g")
	require.True(t, ok, "the group is loaded")
	assert.Equal(t, before, after, "the same group, members and epochs")

	resp, err := other.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: before.Epoch})
	require.NoError(t, err, "m1 heartbeats at its epoch, as it did before the load")
	assert.Equal(t, before.Epoch, resp.Epoch, "no epoch bump: the topics are as they were")
	assert.Nil(t, resp.Assignment, "its assignment has not changed")
	resp, err = other.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Epoch: 2})
	require.NoError(t, err)
	assert.Equal(t, before.Epoch, resp.Epoch)
	assert.Equal(t, Assignment{topicA.ID: {1}}, resp.Assignment, "m2 behind takes its target, kept by the load")

	_, err = other.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Epoch: -1})
	require.NoError(t, err)
	members := func() []string {
		var ids []string
		for _, sg := range st.replay() {
			for _, sm := range sg.Members {
				ids = append(ids, sm.MemberID)
			}
		}
		return ids
	}
	assert.Equal(t, []string{"m1", "m3"}, members(), "m2's tombstone")

	// m3 never heartbeats at the new coordinator; m1 does.
	other.advance(DefaultSessionTimeout - time.Second)
	_, err = other.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: before.Epoch})
	require.NoError(t, err)
	other.advance(time.Second)
	d, _ := other.c.Describe("g")
	require.Len(t, d.Members, 1, "m3's loaded session expired")
	assert.Equal(t, "m1", d.Members[0].ID)
	assert.Equal(t, []string{"m1"}, members(), "m3's tombstone")
	other.mu.Lock()
	assert.Equal(t, []string{"g/m2", "g/m3"}, other.left)
	other.mu.Unlock()

	_, err = other.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: -1})
	require.NoError(t, err)
	found, deleted := other.c.Delete("g")
	require.True(t, found && deleted)
	assert.Empty(t, st.replay(), "the group's tombstone")
}

// TestHeartbeatAnsweredOnceDurable: a heartbeat that changes the group is
// answered once its change is durable, and a write that fails is answered
// as Kafka maps it (a timeout is COORDINATOR_NOT_AVAILABLE, which the
// member retries); a heartbeat that changes nothing writes nothing.
func TestHeartbeatAnsweredOnceDurable(t *testing.T) {
	st := &logStore{held: true}
	h := newHarness(t, withStore(st))
	answered := make(chan error, 1)
	h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Topics: []string{"a"}},
		func(_ HeartbeatResponse, err error) { answered <- err })
	select {
	case err := <-answered:
		t.Fatalf("answered (%v) before the join was durable", err)
	default:
	}
	st.release(nil)
	require.NoError(t, <-answered)

	st.mu.Lock()
	n := len(st.log)
	st.held = true
	st.mu.Unlock()
	_, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 1})
	require.NoError(t, err, "nothing changed: answered at once")
	st.mu.Lock()
	assert.Len(t, st.log, n, "nothing written")
	st.mu.Unlock()

	h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Topics: []string{"a"}},
		func(_ HeartbeatResponse, err error) { answered <- err })
	st.release(kerr.RequestTimedOut)
	assert.ErrorIs(t, <-answered, kerr.CoordinatorNotAvailable)
}

// TestUnloadForgetsWithoutLeaving: a partition unloaded takes its groups
// away silently (their members are not told they left: they go on at the
// new coordinator), and a join to a group not owned is NOT_COORDINATOR.
func TestUnloadForgetsWithoutLeaving(t *testing.T) {
	owned := true
	h := newHarness(t, func(c *Config) { c.Owns = func(string) bool { return owned } })
	h.join(t, "m1", "a")
	assert.Equal(t, 1, h.c.Unload(func(g string) bool { return g == "g" }))
	assert.False(t, h.c.Exists("g"))
	h.advance(DefaultSessionTimeout)
	h.mu.Lock()
	assert.Empty(t, h.left, "nobody left")
	h.mu.Unlock()
	owned = false
	_, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Topics: []string{"a"}})
	assert.ErrorIs(t, err, ErrNotCoordinator)
}
