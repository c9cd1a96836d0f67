package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// leaderFixture is broker 1 of brokers 1, 2, 3 leading partition 0 of a
// topic of replication factor 3, on a clock the test moves, with an image
// the test commits the leader's ISR changes to, as the controller would.
type leaderFixture struct {
	now     time.Time
	leaders *Leaders
	p       *storage.Partition
	id      metadata.TopicID
	im      *metadata.Image
	asked   [][]int32 // the ISR changes asked, in order
	pending *Followers
}

func newLeaderFixture(t *testing.T, minISR int32) *leaderFixture {
	t.Helper()
	store, err := storage.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tc := store.TopicDefaults()
	tc.MinInsyncReplicas = minISR
	topic, err := store.CreateTopicSpec(storage.TopicSpec{Name: "t", Partitions: 1, Config: tc, ReplicationFactor: 3})
	require.NoError(t, err)
	f := &leaderFixture{now: time.Unix(1000, 0), p: topic.Partitions[0], id: metadata.TopicID(topic.ID), im: metadata.Empty()}
	mt, err := metadata.Place(f.im, []int32{1, 2, 3}, "t", f.id, 1, 3, nil)
	require.NoError(t, err)
	f.im = f.im.Apply(1, &metadata.Record{CreateTopics: []*metadata.Topic{mt}})
	f.leaders = NewLeaders(1, fixtureEnv{f}, 10*time.Second, func() time.Time { return f.now })
	return f
}

// fixtureEnv is the fixture's LeaderEnv: its image, and the ISR changes
// asked recorded rather than sent.
type fixtureEnv struct{ f *leaderFixture }

func (e fixtureEnv) State(p *storage.Partition) (metadata.Partition, bool) {
	st, err := e.f.im.Partition(e.f.id, p.Index())
	return st, err == nil
}

func (e fixtureEnv) Fenced(broker int32) bool { return e.f.im.Fenced(broker) }

func (e fixtureEnv) AskISR(pr *Followers, _ metadata.Partition, isr []int32) bool {
	e.f.asked = append(e.f.asked, slices.Clone(isr))
	e.f.pending = pr
	return true
}

// commit has the controller commit the last ISR change asked, and the
// leader apply it.
func (f *leaderFixture) commit(t *testing.T) {
	t.Helper()
	require.NotEmpty(t, f.asked, "an ISR change was asked")
	st := f.state(t)
	rec, err := metadata.AlterISR(f.im, f.id, 0, 1, st.LeaderEpoch, st.PartitionEpoch, f.asked[len(f.asked)-1])
	require.NoError(t, err)
	f.im = f.im.Apply(f.im.Index+1, &rec)
	f.pending.Done(st.PartitionEpoch)
	f.leaders.AfterAppend(f.p)
}

func (f *leaderFixture) state(t *testing.T) metadata.Partition {
	t.Helper()
	st, err := f.im.Partition(f.id, 0)
	require.NoError(t, err)
	return st
}

// appendRecords appends n one-record batches at the leader.
func (f *leaderFixture) appendRecords(t *testing.T, n int) {
	t.Helper()
	for range n {
		_, err := f.p.Append(batchtest.Values(time.Now().UnixMilli(), "v"))
		require.NoError(t, err)
		f.leaders.AfterAppend(f.p)
	}
}

func (f *leaderFixture) hw(t *testing.T) int64 {
	t.Helper()
	o, err := f.p.Offsets()
	require.NoError(t, err)
	return o.HighWatermark
}

// TestHighWatermarkIsTheISRMinimum: the high watermark moves only when
// every in-sync replica has fetched past the records, Kafka's rule.
func TestHighWatermarkIsTheISRMinimum(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 3)
	assert.Equal(t, int64(0), f.hw(t), "no follower has anything yet")
	assert.False(t, f.leaders.FollowerFetched(f.p, 2, 3))
	assert.Equal(t, int64(0), f.hw(t), "follower 3 has nothing yet")
	assert.True(t, f.leaders.FollowerFetched(f.p, 3, 2))
	assert.Equal(t, int64(2), f.hw(t))
	assert.True(t, f.leaders.FollowerFetched(f.p, 3, 3))
	assert.Equal(t, int64(3), f.hw(t))
	assert.False(t, f.leaders.FollowerFetched(f.p, 4, 3), "a broker without a replica is ignored")
	assert.Empty(t, f.asked, "nothing to change in the ISR")
}

// TestLaggingFollowerLeavesAndRejoins: a follower not caught up for
// replica.lag.time.max.ms is dropped from the ISR by an AlterPartition to
// the controller, which lets the high watermark move on once committed;
// one change is in flight at a time; the follower is proposed back once
// it has reached the high watermark, and counts for the high watermark
// from the moment it is proposed.
func TestLaggingFollowerLeavesAndRejoins(t *testing.T) {
	f := newLeaderFixture(t, 2)
	f.appendRecords(t, 2)
	f.leaders.FollowerFetched(f.p, 2, 2)
	assert.Equal(t, int64(0), f.hw(t), "follower 3 holds it back")
	ok, n := f.leaders.EnoughReplicas(f.p)
	assert.True(t, ok)
	assert.Equal(t, 3, n)

	f.now = f.now.Add(5 * time.Second)
	f.leaders.FollowerFetched(f.p, 2, 2) // caught up: it has the log end
	f.leaders.Shrink()
	assert.Empty(t, f.asked, "within the lag time nothing changes")

	f.now = f.now.Add(6 * time.Second) // follower 3: 11s without catching up
	f.leaders.Shrink()
	require.Equal(t, [][]int32{{1, 2}}, f.asked, "the leader asks the controller to drop it")
	f.leaders.Shrink()
	assert.Len(t, f.asked, 1, "one change in flight at a time")
	assert.Equal(t, int64(0), f.hw(t), "not before the controller commits it")
	f.commit(t)
	assert.Equal(t, []int32{1, 2}, f.state(t).ISR)
	assert.Equal(t, int64(2), f.hw(t), "the ISR left has it all")
	ok, n = f.leaders.EnoughReplicas(f.p)
	assert.True(t, ok, "min.insync.replicas 2")
	assert.Equal(t, 2, n)

	f.now = f.now.Add(11 * time.Second) // follower 2 lags too
	f.leaders.Shrink()
	f.commit(t)
	assert.Equal(t, []int32{1}, f.state(t).ISR)
	ok, _ = f.leaders.EnoughReplicas(f.p)
	assert.False(t, ok)
	f.appendRecords(t, 1)
	assert.Equal(t, int64(3), f.hw(t), "the leader alone moves it on append")

	f.leaders.FollowerFetched(f.p, 3, 1)
	assert.Len(t, f.asked, 2, "below the high watermark: not proposed yet")
	f.leaders.FollowerFetched(f.p, 3, 3)
	require.Len(t, f.asked, 3)
	assert.Equal(t, []int32{1, 3}, f.asked[2], "caught up: proposed back")
	f.appendRecords(t, 1)
	assert.Equal(t, int64(3), f.hw(t), "a follower being added counts for the high watermark at once")
	f.commit(t)
	assert.Equal(t, []int32{1, 3}, f.state(t).ISR, "back in, in replica order")
}

// TestNewLeaderEpochStartsAfresh: a leadership at a new epoch forgets the
// followers' fetch state of the last one, and a broker that no longer
// leads keeps none.
func TestNewLeaderEpochStartsAfresh(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 2)
	f.leaders.FollowerFetched(f.p, 2, 2)
	f.leaders.FollowerFetched(f.p, 3, 2)
	assert.Equal(t, int64(2), f.hw(t))
	first, _ := f.leaders.of(f.p)
	require.NotNil(t, first)

	f.im = f.im.Apply(f.im.Index+1, new(metadata.Fence(f.im, 1, false)))
	pr, _ := f.leaders.of(f.p)
	assert.Nil(t, pr, "a broker that does not lead has no replica state")

	st := f.state(t)
	st.Leader, st.LeaderEpoch, st.ISR = 1, st.LeaderEpoch+1, []int32{1, 2, 3}
	f.im = f.im.Apply(f.im.Index+1, &metadata.Record{Partitions: []metadata.PartitionChange{{Topic: f.id, Index: 0, Partition: st}}})
	again, _ := f.leaders.of(f.p)
	require.NotNil(t, again)
	assert.NotSame(t, first, again, "a new epoch, a new state")
	f.appendRecords(t, 1)
	f.leaders.FollowerFetched(f.p, 2, 3)
	assert.Equal(t, int64(2), f.hw(t), "follower 3 has not fetched at this epoch yet")
	f.leaders.FollowerFetched(f.p, 3, 3)
	assert.Equal(t, int64(3), f.hw(t))
}

// TestFollowerAheadOfLeaderDoesNotCount: a follower fetching past the
// leader's log end (it holds offsets a restarted leader lost) is told
// OFFSET_OUT_OF_RANGE and must truncate first: its fetch moves neither its
// recorded log end nor the high watermark, so nothing is acknowledged on
// the strength of records it does not have.
func TestFollowerAheadOfLeaderDoesNotCount(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 1)
	assert.False(t, f.leaders.FollowerFetched(f.p, 2, 5), "past the log end")
	assert.False(t, f.leaders.FollowerFetched(f.p, 3, 1))
	assert.Equal(t, int64(0), f.hw(t), "follower 2 has not shown it holds offset 0")
	assert.True(t, f.leaders.FollowerFetched(f.p, 2, 1))
	assert.Equal(t, int64(1), f.hw(t))
}

// TestReassignmentAddsFollowerAtTheSameEpoch: a replica a reassignment
// adds, at the leader epoch the leader already has followers at, is
// taken into the leader's view: its fetches count, it is proposed for the
// ISR once caught up, and from then on holds the high watermark back, so
// that the ISR change that completes the reassignment (and may hand it
// the leadership) never leaves behind a record the leader acknowledged.
func TestReassignmentAddsFollowerAtTheSameEpoch(t *testing.T) {
	f := newLeaderFixture(t, 1)
	f.appendRecords(t, 5)
	f.leaders.FollowerFetched(f.p, 2, 5)
	f.leaders.FollowerFetched(f.p, 3, 5)
	require.Equal(t, int64(5), f.hw(t))

	epoch := f.state(t).LeaderEpoch
	rec, results := metadata.Reassign(f.im, []int32{1, 2, 3, 4},
		[]metadata.Reassignment{{Partition: metadata.PartitionRef{Topic: f.id, Index: 0}, Target: []int32{1, 2, 3, 4}}}, true, false)
	require.NoError(t, results[0])
	f.im = f.im.Apply(f.im.Index+1, &rec)
	require.Equal(t, epoch, f.state(t).LeaderEpoch, "adding a replica moves no leader epoch")

	f.leaders.FollowerFetched(f.p, 4, 5)
	require.Equal(t, [][]int32{{1, 2, 3, 4}}, f.asked, "the new follower, caught up, is proposed for the ISR")
	f.appendRecords(t, 2)
	f.leaders.FollowerFetched(f.p, 2, 7)
	f.leaders.FollowerFetched(f.p, 3, 7)
	assert.Equal(t, int64(5), f.hw(t), "the follower being added holds the high watermark back")
	f.leaders.FollowerFetched(f.p, 4, 7)
	assert.Equal(t, int64(7), f.hw(t))

	f.commit(t)
	st := f.state(t)
	assert.Equal(t, []int32{1, 2, 3, 4}, st.ISR)
	assert.False(t, st.Reassigning(), "the ISR change completed the reassignment")
}
