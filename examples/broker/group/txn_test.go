package group

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// txnReq is producer's transactional commit to group of offs to
// partitions 0, 1, ... of topic t, without a member (v0-v2).
func txnReq(group string, producer int64, offs ...int64) TxnCommitRequest {
	req := TxnCommitRequest{Group: group, ProducerID: producer, ProducerEpoch: 3, Generation: -1}
	for p, o := range offs {
		req.Offsets = append(req.Offsets, CommitOffset{Topic: "t", Partition: int32(p), Offset: o, LeaderEpoch: 5, Metadata: "txn"})
	}
	return req
}

// txnCommitNow commits req and returns the answer, which must come before
// TxnCommitOffsets returns.
func txnCommitNow(t *testing.T, c *Coordinator, req TxnCommitRequest) []*kerr.Error {
	t.Helper()
	var got []*kerr.Error
	answered := false
	c.TxnCommitOffsets(req, func(errs []*kerr.Error) { got, answered = errs, true })
	require.True(t, answered, "the commit was answered at once")
	return got
}

// fetchStable fetches group's offsets of partitions 0 to n-1 of t with
// require_stable (OffsetFetch v7+).
func fetchStable(t *testing.T, c *Coordinator, group string, n int) []PartitionOffset {
	t.Helper()
	var tps []TopicPartition
	for p := range n {
		tps = append(tps, TopicPartition{"t", int32(p)})
	}
	got, err := c.FetchOffsets(group, tps, true)
	require.Nil(t, err)
	return got
}

// unstable reports, for each offset, whether it was answered
// UNSTABLE_OFFSET_COMMIT (with offset -1, as Kafka answers it).
func unstable(t *testing.T, offs []PartitionOffset) []bool {
	t.Helper()
	out := make([]bool, len(offs))
	for i, o := range offs {
		if o.Err != nil {
			require.Equal(t, kerr.UnstableOffsetCommit, o.Err)
			require.Equal(t, int64(-1), o.Offset)
			out[i] = true
		}
	}
	return out
}

// anyPartition says every group is in the offsets partition whose marker
// was written: the tests' coordinators own one.
func anyPartition(string) bool { return true }

// TestTxnCommitIsPendingUntilItsMarker: a transaction's offsets are not
// visible until its commit marker, and are answered UNSTABLE_OFFSET_COMMIT
// to a fetch that requires stable offsets (KIP-447); the commit makes
// them the committed offsets, an abort drops them. A marker of another
// producer, or of another offsets partition, changes nothing, and one with
// nothing pending is harmless.
func TestTxnCommitIsPendingUntilItsMarker(t *testing.T) {
	c, _ := newTestCoordinator(t)
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", "", -1, 1, 2))
	require.Equal(t, []*kerr.Error{nil, nil}, txnCommitNow(t, c, txnReq("g", 7, 10, 20)))
	assert.Equal(t, []int64{1, 2, -1}, fetch(t, c, "g", 3), "the committed offsets, not the pending ones")
	assert.Equal(t, []bool{true, true, false}, unstable(t, fetchStable(t, c, "g", 3)))
	all, err := c.FetchAllOffsets("g", true)
	require.Nil(t, err)
	assert.Equal(t, []bool{true, true}, unstable(t, all))

	c.CompleteTxn(func(string) bool { return false }, 7, true)
	c.CompleteTxn(anyPartition, 8, true)
	assert.Equal(t, []int64{1, 2}, fetch(t, c, "g", 2), "another partition's marker, another producer's")

	c.CompleteTxn(anyPartition, 7, true)
	got := fetchStable(t, c, "g", 3)
	assert.Equal(t, []bool{false, false, false}, unstable(t, got), "stable once its marker is written")
	assert.Equal(t, PartitionOffset{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: 5, Metadata: "txn"}, got[0])
	assert.Equal(t, int64(20), got[1].Offset)

	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("g", 7, 30)))
	c.CompleteTxn(anyPartition, 7, false)
	assert.Equal(t, []int64{10, 20}, fetch(t, c, "g", 2), "an aborted transaction's offsets are dropped")
	assert.Equal(t, []bool{false, false}, unstable(t, fetchStable(t, c, "g", 2)))
	c.CompleteTxn(anyPartition, 7, true)
	assert.Equal(t, []int64{10, 20}, fetch(t, c, "g", 2), "a second marker finds nothing")
}

// TestTxnCommitsApplyInLogOrder: when a transaction commits, its offset of
// a partition replaces the committed one only if its record is the newer
// (Kafka's completePendingTxnOffsetCommit: olderThan by log position), so
// that a commit made after the transaction's, before its marker, wins;
// whatever order the appends are made durable in.
func TestTxnCommitsApplyInLogOrder(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, c *Coordinator, store *memStore)
		want int64
	}{
		{"a commit after the transaction's wins", func(t *testing.T, c *Coordinator, _ *memStore) {
			require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("g", 7, 10)))
			require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 20))
			c.CompleteTxn(anyPartition, 7, true)
		}, 20},
		{"the transaction's after a commit wins", func(t *testing.T, c *Coordinator, _ *memStore) {
			require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 20))
			require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("g", 7, 10)))
			c.CompleteTxn(anyPartition, 7, true)
		}, 10},
		{"a commit durable after the later transaction's marker loses", func(t *testing.T, c *Coordinator, store *memStore) {
			store.hold = true
			a := new(answers[[]*kerr.Error])
			c.CommitOffsets(simpleCommit(20), a.respond)
			tx := new(answers[[]*kerr.Error])
			c.TxnCommitOffsets(txnReq("g", 7, 10), tx.respond)
			store.release(1, nil)
			assert.Equal(t, []*kerr.Error{nil}, tx.one(t))
			c.CompleteTxn(anyPartition, 7, true)
			store.release(0, nil)
			assert.Equal(t, []*kerr.Error{nil}, a.one(t))
		}, 10},
		{"a later commit durable after the marker wins", func(t *testing.T, c *Coordinator, store *memStore) {
			store.hold = true
			tx := new(answers[[]*kerr.Error])
			c.TxnCommitOffsets(txnReq("g", 7, 10), tx.respond)
			a := new(answers[[]*kerr.Error])
			c.CommitOffsets(simpleCommit(20), a.respond)
			store.release(0, nil)
			c.CompleteTxn(anyPartition, 7, true)
			assert.Equal(t, []int64{10}, fetch(t, c, "g", 1))
			store.release(1, nil)
		}, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			c, _ := newTestCoordinator(t, WithOffsetStore(store))
			tt.run(t, c, store)
			assert.Equal(t, []int64{tt.want}, fetch(t, c, "g", 1))
		})
	}
}

// TestRequireStableWithPendingCommits: Kafka 3's coordinator answers
// UNSTABLE_OFFSET_COMMIT for a partition with any commit pending
// (hasPendingOffsetCommitsForTopicPartition): a plain commit waiting for
// its replication too.
func TestRequireStableWithPendingCommits(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	require.Equal(t, []*kerr.Error{nil}, commitNow(t, c, simpleCommit(1)))
	store.hold = true
	a := new(answers[[]*kerr.Error])
	c.CommitOffsets(simpleCommit(2), a.respond)
	assert.Equal(t, []bool{true}, unstable(t, fetchStable(t, c, "g", 1)))
	store.release(0, nil)
	assert.Equal(t, []*kerr.Error{nil}, a.one(t))
	got := fetchStable(t, c, "g", 1)
	assert.Equal(t, []bool{false}, unstable(t, got))
	assert.Equal(t, int64(2), got[0].Offset)
}

// TestTxnCommitChecks: Kafka's validateOffsetCommit for a transactional
// commit. Without a member (v0-v2, or a producer that does not say) any
// group takes it; with one (v3, KIP-447), the member, its static instance
// and its generation are checked, whatever the group's state. A group
// that does not exist is created, Empty, first.
func TestTxnCommitChecks(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 1)
	r := res[0]
	static := joinReq("s", "")
	static.InstanceID = "i"
	sj := join(c, static)
	clk.Advance(testDelay)
	sr := sj.one(t)
	require.Nil(t, sr.Err)
	member := func(group, id, instance string, gen int32) TxnCommitRequest {
		req := txnReq(group, 7, 1)
		req.MemberID, req.InstanceID, req.Generation = id, instance, gen
		return req
	}
	for _, tt := range []struct {
		name string
		req  TxnCommitRequest
		want *kerr.Error
	}{
		{"no member, a group with members", txnReq("g", 7, 1), nil},
		{"no member, a new group", txnReq("new", 7, 1), nil},
		{"the member at its generation", member("g", r.MemberID, "", r.Generation), nil},
		{"an old generation", member("g", r.MemberID, "", r.Generation-1), kerr.IllegalGeneration},
		{"an unknown member", member("g", "who", "", r.Generation), kerr.UnknownMemberID},
		{"a member id without a generation", member("g", "who", "", -1), kerr.UnknownMemberID},
		{"a generation of a group that did not exist", member("none", "who", "", 1), kerr.UnknownMemberID},
		{"a static member", member("s", sr.MemberID, "i", sr.Generation), nil},
		{"a fenced static member", member("s", "old", "i", sr.Generation), kerr.FencedInstanceID},
		{"an unknown instance", member("s", sr.MemberID, "j", sr.Generation), kerr.UnknownMemberID},
		{"no group id", txnReq("", 7, 1), kerr.InvalidGroupID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, []*kerr.Error{tt.want}, txnCommitNow(t, c, tt.req))
		})
	}
	st, _ := state(t, c, "new")
	assert.Equal(t, Empty, st, "created Empty")
	_, found, _ := c.DescribeGroup("none")
	assert.True(t, found, "created, as Kafka does, before the member is checked")

	// CompletingRebalance: a commit waits for the assignment, a
	// transaction's does not (Kafka checks no state for it).
	join(c, joinReq("g", r.MemberID))
	st, _ = state(t, c, "g")
	require.Equal(t, CompletingRebalance, st)
	assert.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, member("g", r.MemberID, "", r.Generation+1)))

	big := txnReq("meta", 9, 1, 2)
	big.Offsets[0].Metadata = string(make([]byte, DefaultMaxMetadataSize+1))
	assert.Equal(t, []*kerr.Error{kerr.OffsetMetadataTooLarge, nil}, txnCommitNow(t, c, big))
	assert.Equal(t, []bool{false, true}, unstable(t, fetchStable(t, c, "meta", 2)), "only what was taken is pending")
}

// TestTxnCommitIsStored: a transaction's offsets are appended as the
// producer's (its id and epoch), answered once durable as a commit is;
// one that does not become durable, or that the store refuses, is
// answered the store's error and is not pending.
func TestTxnCommitIsStored(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	store.hold = true
	a := new(answers[[]*kerr.Error])
	c.TxnCommitOffsets(txnReq("g", 7, 10, 11), a.respond)
	assert.Zero(t, a.n(), "not answered before it is durable")
	assert.Equal(t, []string{"txn commit g 7/3 t-0=10", "txn commit g 7/3 t-1=11"}, store.log())
	store.release(0, nil)
	assert.Equal(t, []*kerr.Error{nil, nil}, a.one(t))

	b := new(answers[[]*kerr.Error])
	c.TxnCommitOffsets(txnReq("g", 8, 20), b.respond)
	assert.Equal(t, []bool{true, true}, unstable(t, fetchStable(t, c, "g", 2)))
	store.release(1, kerr.RequestTimedOut)
	assert.Equal(t, []*kerr.Error{kerr.CoordinatorNotAvailable}, b.one(t))
	assert.Equal(t, []bool{true, true}, unstable(t, fetchStable(t, c, "g", 2)), "producer 7's are still pending")
	c.CompleteTxn(anyPartition, 8, true)
	assert.Equal(t, []int64{-1, -1}, fetch(t, c, "g", 2), "producer 8's failed commit is not pending")

	store.failWith(kerr.NotEnoughReplicas)
	assert.Equal(t, []*kerr.Error{kerr.CoordinatorNotAvailable}, txnCommitNow(t, c, txnReq("h", 9, 1)))
	assert.Equal(t, []bool{false}, unstable(t, fetchStable(t, c, "h", 1)), "a refused commit is not pending")
	store.failWith(nil)

	c.CompleteTxn(anyPartition, 7, true)
	assert.Equal(t, []int64{10, 11}, fetch(t, c, "g", 2))
}

// TestTxnOffsetsSurviveALoad: a coordinator that loads the store finds
// the transaction's offsets pending, ordered against the committed ones
// by their records' positions, so that the marker written after the move
// completes them there as it would have here. A group with nothing but
// pending offsets is loaded too.
func TestTxnOffsetsSurviveALoad(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store), WithWallClock(func() time.Time { return epoch }))
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", "", -1, 1, 2))
	require.Equal(t, []*kerr.Error{nil, nil}, txnCommitNow(t, c, txnReq("g", 7, 10, 11)))
	require.Equal(t, []*kerr.Error{nil}, commitNow(t, c, CommitRequest{Group: "g", Generation: -1, Retention: -1,
		Offsets: []CommitOffset{{Topic: "t", Partition: 1, Offset: 12, LeaderEpoch: -1}}}))
	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("only", 8, 5)))
	require.NoError(t, c.Close())

	again, _ := restartOn(t, store, epoch.Add(time.Minute))
	assert.Equal(t, []int64{1, 12}, fetch(t, again, "g", 2))
	assert.Equal(t, []bool{true, true}, unstable(t, fetchStable(t, again, "g", 2)))
	assert.Equal(t, []bool{true}, unstable(t, fetchStable(t, again, "only", 1)), "a group of pending offsets alone is loaded")
	again.CompleteTxn(anyPartition, 7, true)
	got := fetchStable(t, again, "g", 2)
	assert.Equal(t, PartitionOffset{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: 5, Metadata: "txn"}, got[0])
	assert.Equal(t, int64(12), got[1].Offset, "the commit after the transaction's stays")
	again.CompleteTxn(anyPartition, 8, false)
	assert.Equal(t, []int64{-1}, fetch(t, again, "only", 1))

	// The log agrees: with the markers in it, a load sees the same.
	store.marker(7, true)
	store.marker(8, false)
	third, _ := restartOn(t, store, epoch.Add(2*time.Minute))
	assert.Equal(t, []int64{10, 12}, fetch(t, third, "g", 2))
	assert.Equal(t, []bool{false, false}, unstable(t, fetchStable(t, third, "g", 2)))
}

// TestPendingTxnOffsetsDoNotExpire: an Empty group's offset of a partition
// with a transaction's offset pending does not expire, nor is the group
// deleted while any is pending (Kafka's cleanupExpiredOffsets); once the
// transaction ends they expire as they would have.
func TestPendingTxnOffsetsDoNotExpire(t *testing.T) {
	const retention = time.Hour
	c, clk := newTestCoordinator(t, WithOffsetsRetention(retention), WithEmptyGroupRetention(time.Minute))
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", "", -1, 1, 2))
	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("g", 7, 10)))
	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("pending-only", 8, 5)))
	clk.Advance(2 * retention)
	assert.Equal(t, []int64{1, -1}, fetch(t, c, "g", 2), "partition 1 expired, 0 waits for its transaction")
	_, found, _ := c.DescribeGroup("pending-only")
	assert.True(t, found, "a group with a transaction's offsets pending is not deleted")

	c.CompleteTxn(anyPartition, 7, false)
	c.CompleteTxn(anyPartition, 8, false)
	clk.Advance(time.Minute)
	assert.Equal(t, []int64{-1, -1}, fetch(t, c, "g", 2), "expired once the transaction ended")
	for _, g := range []string{"g", "pending-only"} {
		_, found, _ = c.DescribeGroup(g)
		assert.False(t, found, "%s is deleted", g)
	}
	assert.Zero(t, c.expiry.Delayed())
}

// TestDeletionsDropPendingTxnOffsets: DeleteGroups deletes an Empty group
// whatever its transactions (Kafka's deleteAllOffsets takes their pending
// offsets too), and OffsetDelete a partition's pending offsets with its
// committed one; each is a tombstone, which a load replays alike. A later
// marker finds nothing to complete.
func TestDeletionsDropPendingTxnOffsets(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 1))
	require.Equal(t, []*kerr.Error{nil, nil}, txnCommitNow(t, c, txnReq("g", 7, 10, 11)))
	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("h", 7, 20)))

	gerr, errs := c.DeleteOffsets("g", []TopicPartition{{"t", 1}})
	require.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{nil}, errs)
	assert.Equal(t, []bool{true, false}, unstable(t, fetchStable(t, c, "g", 2)), "t-1's pending offset is deleted")
	assert.Contains(t, store.log(), "delete g t-1", "with a tombstone: there was a pending offset")
	assert.Equal(t, []*kerr.Error{nil}, c.DeleteGroups([]string{"h"}))

	c.CompleteTxn(anyPartition, 7, true)
	assert.Equal(t, []int64{10, -1}, fetch(t, c, "g", 2))
	assert.Equal(t, []int64{-1}, fetch(t, c, "h", 1))
	_, found, _ := c.DescribeGroup("h")
	assert.False(t, found, "the marker does not bring the group back")
}

// TestUnloadWithPendingTxnOffsets: an unloaded group's pending offsets go
// with it; a marker after the unload finds nothing (the new coordinator
// completes them), and a load brings them back.
func TestUnloadWithPendingTxnOffsets(t *testing.T) {
	store := newMemStore()
	c, _ := newTestCoordinator(t, WithOffsetStore(store))
	require.Equal(t, []*kerr.Error{nil}, txnCommitNow(t, c, txnReq("g", 7, 10)))
	assert.Equal(t, 1, c.Unload(anyPartition))
	c.CompleteTxn(anyPartition, 7, true)
	_, found, _ := c.DescribeGroup("g")
	assert.False(t, found)

	_, err := c.Load(store.stored())
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, unstable(t, fetchStable(t, c, "g", 1)))
	c.CompleteTxn(anyPartition, 7, true)
	assert.Equal(t, []int64{10}, fetch(t, c, "g", 1))
}

// TestTxnCommitsRaceMarkersAndMoves races transactional commits, commits,
// markers, stable fetches and deletions against the partition moving
// away and back (Unload, then Load of what the store holds) and a clock
// that keeps expiring offsets. Every commit is answered once, the groups'
// bookkeeping holds (the -race build checks it at every unlock), and once
// every transaction is aborted nothing is left pending nor indexed.
func TestTxnCommitsRaceMarkersAndMoves(t *testing.T) {
	store := newMemStore()
	var owned atomic.Bool
	owned.Store(true)
	c, clk := newTestCoordinator(t, WithOffsetStore(store), WithOwner(func(string) bool { return owned.Load() }),
		WithOffsetsRetention(time.Second), WithEmptyGroupRetention(time.Second))
	const workers, rounds = 4, 500

	stop, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(97 * time.Millisecond)
				runtime.Gosched()
			}
		}
	}()
	var (
		wg       sync.WaitGroup
		answered atomic.Int64
		asked    atomic.Int64
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			producer := int64(100 + w)
			group := fmt.Sprintf("g%d", w%2)
			for range rounds {
				switch rng.IntN(7) {
				case 0, 1:
					asked.Add(1)
					c.TxnCommitOffsets(txnReq(group, producer, rng.Int64N(100), rng.Int64N(100)), func([]*kerr.Error) { answered.Add(1) })
				case 2:
					commit := rng.IntN(2) == 0
					store.marker(producer, commit) // appended first, then handed over
					c.CompleteTxn(anyPartition, producer, commit)
				case 3:
					asked.Add(1)
					c.CommitOffsets(simpleCommit(rng.Int64N(100)), func([]*kerr.Error) { answered.Add(1) })
				case 4:
					_, _ = c.FetchOffsets(group, []TopicPartition{{"t", 0}, {"t", 1}}, true)
				case 5:
					_, _ = c.DeleteOffsets(group, []TopicPartition{{"t", int32(rng.IntN(2))}})
				case 6:
					if w == 0 {
						owned.Store(false)
						c.Unload(anyPartition)
						_, err := c.Load(store.stored())
						assert.NoError(t, err)
						owned.Store(true)
					}
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-ticked
	assert.Equal(t, asked.Load(), answered.Load(), "every commit answered once")
	for w := range workers {
		store.marker(int64(100+w), false)
		c.CompleteTxn(anyPartition, int64(100+w), false)
	}
	c.mu.Lock()
	assert.Empty(t, c.producers, "no producer indexed once every transaction ended")
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		assert.Empty(t, g.txns, "group %s", g.id)
		g.mu.Unlock()
	}
}
