package group

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is an OffsetStore in memory, shared by the coordinators of a
// test as a file is by the brokers that open it in turn. It records each
// change as a line, and refuses them when told. Each offset it stores
// takes the next position, as its record would in a log, and a
// transaction's offsets stay pending until marker ends it, as a replay of
// the log would have them.
type memStore struct {
	mu      sync.Mutex
	groups  map[string]*StoredGroup
	changes []string
	fail    error
	hold    bool          // commits and group metadata wait in held until released
	held    []func(error) // the waits of commits and metadata not yet durable
	metas   int           // group metadata records stored
	pos     int64         // the next offset record's position
}

func newMemStore() *memStore { return &memStore{groups: make(map[string]*StoredGroup)} }

// stored returns the groups the store holds, as a partition's replay
// would.
func (s *memStore) stored() []StoredGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoredGroup
	for _, g := range s.groups {
		sg := *g
		// Copies: the store changes its own in place.
		sg.Offsets, sg.TxnOffsets = slices.Clone(g.Offsets), slices.Clone(g.TxnOffsets)
		out = append(out, sg)
	}
	return out
}

// Commit records the offsets; they are durable at once, unless the store
// holds commits, when they wait for release.
func (s *memStore) Commit(group, ptype string, offsets []StoredOffset) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	hold := s.hold
	g := s.groups[group]
	if g == nil {
		g = &StoredGroup{Group: group}
		s.groups[group] = g
	}
	if ptype != "" {
		g.ProtocolType = ptype
	}
	for _, o := range offsets {
		o.Position, s.pos = s.pos, s.pos+1
		g.Offsets = deleteOffset(g.Offsets, o.TopicPartition)
		g.Offsets = append(g.Offsets, o)
		s.changes = append(s.changes, fmt.Sprintf("commit %s %s-%d=%d", group, o.Topic, o.Partition, o.Offset))
	}
	return s.pending(hold), nil
}

// TxnCommit records the offsets pending in producerID's transaction;
// they wait for release as commits do when the store holds.
func (s *memStore) TxnCommit(group string, producerID int64, producerEpoch int16, offsets []StoredOffset) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	g := s.groups[group]
	if g == nil {
		g = &StoredGroup{Group: group}
		s.groups[group] = g
	}
	for _, o := range offsets {
		o.Position, s.pos = s.pos, s.pos+1
		g.TxnOffsets = slices.DeleteFunc(g.TxnOffsets, func(p StoredTxnOffset) bool {
			return p.ProducerID == producerID && p.TopicPartition == o.TopicPartition
		})
		g.TxnOffsets = append(g.TxnOffsets, StoredTxnOffset{ProducerID: producerID, StoredOffset: o})
		s.changes = append(s.changes, fmt.Sprintf("txn commit %s %d/%d %s-%d=%d", group, producerID, producerEpoch,
			o.Topic, o.Partition, o.Offset))
	}
	return s.pending(s.hold), nil
}

// marker ends producerID's transaction, as its marker in the log does: a
// commit makes its offsets the committed ones where they are newer than
// those, an abort drops them.
func (s *memStore) marker(producerID int64, commit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		g.TxnOffsets = slices.DeleteFunc(g.TxnOffsets, func(p StoredTxnOffset) bool {
			if p.ProducerID != producerID {
				return false
			}
			if commit {
				i := slices.IndexFunc(g.Offsets, func(o StoredOffset) bool { return o.TopicPartition == p.TopicPartition })
				switch {
				case i < 0:
					g.Offsets = append(g.Offsets, p.StoredOffset)
				case g.Offsets[i].Position < p.Position:
					g.Offsets[i] = p.StoredOffset
				}
			}
			return true
		})
	}
	s.changes = append(s.changes, fmt.Sprintf("marker %d commit=%v", producerID, commit))
}

// Group records the group's metadata, which replaces the metadata stored
// before; it is durable at once, unless the store holds, when it waits for
// release as commits do.
func (s *memStore) Group(sg StoredGroup) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	hold := s.hold
	g := s.groups[sg.Group]
	if g == nil {
		g = &StoredGroup{Group: sg.Group}
		s.groups[sg.Group] = g
	}
	offs := g.Offsets
	*g = sg
	g.Offsets = offs
	s.metas++
	return s.pending(hold), nil
}

// pending is a change's wait: done at once, or held until release when
// the store holds.
func (s *memStore) pending(hold bool) Pending {
	return func(done func(error)) {
		if !hold {
			done(nil)
			return
		}
		s.mu.Lock()
		s.held = append(s.held, done)
		s.mu.Unlock()
	}
}

// release ends the wait of the i-th commit held with err.
func (s *memStore) release(i int, err error) {
	s.mu.Lock()
	done := s.held[i]
	s.mu.Unlock()
	done(err)
}

func deleteOffset(offs []StoredOffset, tp TopicPartition) []StoredOffset {
	for i, o := range offs {
		if o.TopicPartition == tp {
			return append(offs[:i], offs[i+1:]...)
		}
	}
	return offs
}

func (s *memStore) Delete(group string, tps []TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, tp := range tps {
		if g := s.groups[group]; g != nil {
			g.Offsets = deleteOffset(g.Offsets, tp)
			g.TxnOffsets = slices.DeleteFunc(g.TxnOffsets, func(p StoredTxnOffset) bool { return p.TopicPartition == tp })
		}
		s.changes = append(s.changes, fmt.Sprintf("delete %s %s-%d", group, tp.Topic, tp.Partition))
	}
	return nil
}

func (s *memStore) DeleteGroup(group string, _ []TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	delete(s.groups, group)
	s.changes = append(s.changes, "delete group "+group)
	return nil
}

func (s *memStore) failWith(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *memStore) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.changes...)
}

// epoch is the wall-clock time of the tests' first coordinator.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// restartOn returns a new coordinator on store, whose wall clock reads at.
func restartOn(t *testing.T, store OffsetStore, at time.Time, opts ...Option) (*Coordinator, interface{ Advance(time.Duration) }) {
	t.Helper()
	c, clk := newTestCoordinator(t, append([]Option{WithOffsetStore(store), WithWallClock(func() time.Time { return at })}, opts...)...)
	_, err := c.Load(store.(*memStore).stored())
	require.NoError(t, err)
	return c, clk
}

func TestOffsetsSurviveARestart(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	res := stableGroup(t, c, clk, "g", 2)
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", res[0].MemberID, res[0].Generation, 10, 20))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "simple", "", -1, 5))
	require.NoError(t, c.Close())
	g := store.groups["g"]
	require.NotNil(t, g)
	assert.Equal(t, "consumer", g.ProtocolType)
	assert.Equal(t, StoredOffset{TopicPartition: TopicPartition{"t", 0}, Offset: 10, LeaderEpoch: 7, Metadata: "m",
		Committed: epoch.Add(2 * testDelay)}, g.Offsets[0], "wall-clock times: the coordinator's clock dies with it")

	again, _ := restartOn(t, store, epoch.Add(time.Hour))
	assert.Equal(t, []int64{10, 20, -1}, fetch(t, again, "g", 3), "the offsets are back")
	got, err := again.FetchOffsets("g", []TopicPartition{{"t", 1}}, false)
	require.Nil(t, err)
	assert.Equal(t, PartitionOffset{Topic: "t", Partition: 1, Offset: 20, LeaderEpoch: 7, Metadata: "m"}, got[0])
	assert.Equal(t, []int64{5}, fetch(t, again, "simple", 1))
	d, found, err := again.DescribeGroup("g")
	require.Nil(t, err)
	assert.True(t, found)
	assert.Equal(t, Stable, d.State, "the members come back with their generation")
	assert.Equal(t, "consumer", d.ProtocolType)

	// A member of the stored generation goes on: its commits are taken.
	assert.Equal(t, []*kerr.Error{nil}, commit(t, again, "g", res[0].MemberID, res[0].Generation, 11))
}

// A restart brings back the offsets committed to the group "", which Kafka
// accepts, and deletes from the store a group left without offsets.
func TestRestoreKeepsTheEmptyGroupIDAndDropsGroupsWithoutOffsets(t *testing.T) {
	store := newMemStore()
	_, err := store.Commit("", "", []StoredOffset{{TopicPartition: TopicPartition{"t", 0}, Offset: 5, LeaderEpoch: -1, Committed: epoch}})
	require.NoError(t, err)
	_, err = store.Commit("gone", "consumer", nil)
	require.NoError(t, err)
	again, _ := restartOn(t, store, epoch)
	assert.Equal(t, []int64{5}, fetch(t, again, "", 1))
	assert.Contains(t, store.log(), "delete group gone")
	assert.NotContains(t, store.groups, "gone")
}

// TestExpiryAcrossARestart: a consumer group's offsets expire
// offsets.retention.minutes after it became Empty, which after a restart is
// the restart; an explicit retention keeps its wall-clock deadline; the
// expiry is recorded.
func TestExpiryAcrossARestart(t *testing.T) {
	store := newMemStore()
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }),
		WithOffsetsRetention(time.Hour))
	res := stableGroup(t, c, clk, "g", 1)
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", res[0].MemberID, res[0].Generation, 10))
	explicit := commitNow(t, c, CommitRequest{Group: "simple", Generation: -1, Retention: 2 * time.Hour,
		Offsets: []CommitOffset{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}})
	require.Equal(t, []*kerr.Error{nil}, explicit)
	// The member leaves: the group is stored Empty, and comes back so.
	_, errs := c.LeaveGroup("g", []MemberIdentity{{MemberID: res[0].MemberID}})
	require.Equal(t, []*kerr.Error{nil}, errs)
	require.Empty(t, store.groups["g"].Members)
	require.NoError(t, c.Close())
	committedAt := store.groups["simple"].Offsets[0].Committed
	assert.Equal(t, committedAt.Add(2*time.Hour), store.groups["simple"].Offsets[0].ExpireAt)

	// 90 minutes of wall time later.
	again, clk2 := restartOn(t, store, committedAt.Add(90*time.Minute), WithOffsetsRetention(time.Hour))
	clk2.Advance(29 * time.Minute)
	assert.Equal(t, []int64{3}, fetch(t, again, "simple", 1))
	clk2.Advance(time.Minute)
	assert.Equal(t, []int64{-1}, fetch(t, again, "simple", 1), "expired two hours after its commit, wall-clock")
	assert.Equal(t, []int64{10}, fetch(t, again, "g", 1), "the consumer group's hour counts from the restart")
	clk2.Advance(30 * time.Minute)
	assert.Equal(t, []int64{-1}, fetch(t, again, "g", 1))
	assert.Contains(t, store.log(), "delete group simple", "expiries are recorded")
	assert.Contains(t, store.log(), "delete group g")
	assert.Empty(t, store.groups)

	third, _ := restartOn(t, store, committedAt.Add(3*time.Hour))
	assert.Equal(t, []int64{-1}, fetch(t, third, "g", 1), "and stay expired")
}

func TestDeletionsAreRecorded(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	require.Equal(t, []*kerr.Error{nil, nil, nil}, commit(t, c, "g", "", -1, 1, 2, 3))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "h", "", -1, 9))
	gerr, errs := c.DeleteOffsets("g", []TopicPartition{{"t", 1}, {"t", 7}})
	require.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{nil, nil}, errs)
	assert.Equal(t, []*kerr.Error{nil}, c.DeleteGroups([]string{"h"}))
	assert.Equal(t, []string{"commit g t-0=1", "commit g t-1=2", "commit g t-2=3", "commit h t-0=9",
		"delete g t-1", "delete group h"}, store.log(), "only what existed is deleted")

	again, _ := restartOn(t, store, epoch)
	assert.Equal(t, []int64{1, -1, 3}, fetch(t, again, "g", 3))
	_, found, _ := again.DescribeGroup("h")
	assert.False(t, found)
}

// TestStoreRefusals: a change the store refuses does not happen, and the
// client is told NOT_COORDINATOR, as Kafka answers a commit it cannot
// append to __consumer_offsets.
func TestStoreRefusals(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 1))
	store.failWith(errors.New("disk full"))
	big := CommitRequest{Group: "g", Generation: -1, Retention: -1, Offsets: []CommitOffset{
		{Topic: "t", Partition: 0, Offset: 2}, {Topic: "t", Partition: 1, Offset: 2, Metadata: string(make([]byte, 5000))}}}
	assert.Equal(t, []*kerr.Error{kerr.NotCoordinator, kerr.OffsetMetadataTooLarge}, commitNow(t, c, big))
	assert.Equal(t, []int64{1, -1}, fetch(t, c, "g", 2), "nothing committed")
	gerr, _ := c.DeleteOffsets("g", []TopicPartition{{"t", 0}})
	assert.Equal(t, kerr.NotCoordinator, gerr)
	assert.Equal(t, []*kerr.Error{kerr.NotCoordinator}, c.DeleteGroups([]string{"g"}))
	assert.Equal(t, []int64{1}, fetch(t, c, "g", 1), "nothing deleted")
	// As Kafka's storeOffsets maps its append's errors: a commit too
	// large to store is INVALID_COMMIT_OFFSET_SIZE (a client retries
	// NOT_COORDINATOR for ever), too few replicas COORDINATOR_NOT_AVAILABLE.
	store.failWith(kerr.MessageTooLarge)
	assert.Equal(t, []*kerr.Error{kerr.InvalidCommitOffsetSize}, commit(t, c, "g", "", -1, 3))
	store.failWith(kerr.NotEnoughReplicas)
	assert.Equal(t, []*kerr.Error{kerr.CoordinatorNotAvailable}, commit(t, c, "g", "", -1, 3))
	assert.Equal(t, []int64{1}, fetch(t, c, "g", 1), "nothing committed")
	store.failWith(nil)
	assert.Equal(t, []*kerr.Error{nil}, c.DeleteGroups([]string{"g"}))
}
