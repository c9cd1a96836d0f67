package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// compactAfter20 makes the offsets partition's leader rewrite its live
// records once 20 dead ones outnumber them.
func compactAfter20(c *Config) { c.OffsetsCompactionDeadRecords = 20 }

// reloadOffsets unloads the offsets partition and loads it again at the
// same leader epoch, as a new leader loads it, and waits for the load.
func reloadOffsets(t *testing.T, s *Server, between func()) {
	t.Helper()
	s.offsets.Reload(0, between)
	require.Nil(t, s.offsets.KeyError("g"), "loaded")
}

// heldRecords returns the number of records the partition holds.
func heldRecords(t *testing.T, p *storage.Partition) int64 {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	return o.LogEnd - o.LogStart
}

// TestOffsetsPartitionStaysBounded: commits of the same offsets, over and
// over, leave the partition holding a bounded number of records, its log
// start moving past the dead ones; and a reload from the log start gives
// the same committed offsets.
func TestOffsetsPartitionStaysBounded(t *testing.T) {
	s, c, p := newOffsetsServer(t, compactAfter20)
	c.RoundTrip(commitReq(8, "other", "", -1, 100)) // a group whose offsets never change
	for i := range int64(1000) {
		require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, i))))
		// 4 live records (the two groups' offsets), 20 dead at most
		// before a rewrite, then the rewrite, then a commit's (2; 3
		// when a group's metadata record led each commit).
		require.LessOrEqual(t, heldRecords(t, p), int64(4+20+3+4+3), "after commit %d", i)
	}
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Greater(t, o.LogStart, int64(1900), "the log start followed the rewrites (a commit is 2 records)")
	assert.Equal(t, []int64{999, 1000}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))

	reloadOffsets(t, s, nil)
	assert.Equal(t, []int64{999, 1000}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "replayed from the log start")
	assert.Equal(t, []int64{100, 101}, fetchOffsets(t, c, 8, "other", "orders", 0, 1), "an offset committed once survives every rewrite")

	// A deleted group stays deleted across rewrites: its tombstones are
	// dropped with the records they delete.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"other"}
	require.Equal(t, int16(0), c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	for i := range int64(100) {
		require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, 6000+i))))
	}
	assert.LessOrEqual(t, heldRecords(t, p), int64(2+20+3+2+3))
	reloadOffsets(t, s, nil)
	assert.Equal(t, []int64{6099, 6100}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
	assert.Equal(t, []int64{-1, -1}, fetchOffsets(t, c, 8, "other", "orders", 0, 1))
}

// pendingRewrite commits to g until a commit's append is followed by a
// rewrite, each commit before it made durable; that last commit is left
// pending, its answer not yet given. It returns the connection, that
// commit's request, the high watermark before it and the offset it
// commits to partition 0.
func pendingRewrite(t *testing.T, s *Server, p *storage.Partition) (*testConn, *kafkanet.Request, int64, int64) {
	t.Helper()
	p.SetHighWatermarkManaged(true) // as with followers: the append alone does not move it
	tc := newTestConn(t, s)
	for i := int64(10); ; i++ {
		before, err := p.Offsets()
		require.NoError(t, err)
		r := tc.request(commitReq(8, "g", "", -1, i))
		s.handleOffsetCommit(r)
		after, err := p.Offsets()
		require.NoError(t, err)
		if after.LogEnd-before.LogEnd > 2 {
			return tc, r, before.HighWatermark, i // the commit's 2 records, then the rewrite
		}
		p.AdvanceHighWatermark(after.LogEnd)
		s.replicas.Wake(p)
		require.Equal(t, []int16{0, 0}, commitCodes(tc.await(r)))
		require.Less(t, i, int64(100), "a rewrite comes")
	}
}

// TestOffsetsRewriteWithACommitPending: a rewrite appended while a commit
// is pending holds it; the log start does not move until the high
// watermark passes the rewrite; and whether the rewrite survives a change
// of leader or not, no acknowledged commit is lost.
func TestOffsetsRewriteWithACommitPending(t *testing.T) {
	t.Run("the rewrite is replicated", func(t *testing.T) {
		s, c, p := newOffsetsServer(t, compactAfter20)
		tc, r, _, last := pendingRewrite(t, s, p)
		o, err := p.Offsets()
		require.NoError(t, err)
		assert.Equal(t, int64(0), o.LogStart, "the high watermark has not passed the rewrite")

		p.AdvanceHighWatermark(o.LogEnd)
		s.replicas.Wake(p)
		assert.Equal(t, []int16{0, 0}, commitCodes(tc.await(r)), "the pending commit is durable")
		o, err = p.Offsets()
		require.NoError(t, err)
		assert.Greater(t, o.LogStart, int64(0), "the log start moved to the rewrite")
		assert.Equal(t, []int64{last, last + 1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
		reloadOffsets(t, s, nil)
		assert.Equal(t, []int64{last, last + 1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "the rewrite held the pending commit")
	})

	t.Run("the leader changes before the rewrite is replicated", func(t *testing.T) {
		s, c, p := newOffsetsServer(t, compactAfter20, func(c *Config) { c.OffsetsCommitTimeout = 100 * time.Millisecond })
		tc, r, hw, last := pendingRewrite(t, s, p)
		// The new leader has the log up to the high watermark: the old
		// one, following it, is cut back there, losing the pending
		// commit and the rewrite.
		reloadOffsets(t, s, func() { require.NoError(t, p.TruncateTo(hw)) })
		assert.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code}, commitCodes(tc.await(r)),
			"the pending commit is not acknowledged")
		o, err := p.Offsets()
		require.NoError(t, err)
		assert.Equal(t, int64(0), o.LogStart)
		assert.Equal(t, []int64{last - 1, last}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "every acknowledged commit is there")

		// The new leader's compaction follows its own log.
		p.SetHighWatermarkManaged(false)
		for i := range int64(200) {
			require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, 1000+i))))
		}
		assert.LessOrEqual(t, heldRecords(t, p), int64(2+20+3+2+3))
		reloadOffsets(t, s, nil)
		assert.Equal(t, []int64{1199, 1200}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
	})
}

// TestMembersSurviveAReload: a Stable group's record (its generation,
// members and assignments, written by the leader's SyncGroup) brings the
// group back Stable on a load, as on a new leader: its member heartbeats
// with its id and generation and is answered NONE, not
// REBALANCE_IN_PROGRESS, and a SyncGroup gets its assignment; and the
// rewrite of a compaction keeps the group's latest record.
func TestMembersSurviveAReload(t *testing.T) {
	s, c, p := newOffsetsServer(t, compactAfter20)
	j := c.stable("m")
	// A second generation: the leader rejoins.
	j = c.RoundTrip(joinGroupReq(9, "m", j.MemberID)).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), j.ErrorCode)
	require.Equal(t, int32(2), j.Generation)
	require.Equal(t, int16(0), c.RoundTrip(syncGroupReq(5, "m", j)).(*kmsg.SyncGroupResponse).ErrorCode)

	check := func(why string) {
		t.Helper()
		assert.Equal(t, int16(0), c.heartbeat(4, "m", j), "%s: the member goes on", why)
		d := c.describe("m")
		assert.Equal(t, "Stable", d.State, why)
		require.Len(t, d.Members, 1, why)
		assert.Equal(t, j.MemberID, d.Members[0].MemberID, why)
		sync := c.RoundTrip(syncGroupReq(5, "m", j)).(*kmsg.SyncGroupResponse)
		assert.Equal(t, int16(0), sync.ErrorCode, why)
		assert.Equal(t, []byte("assignment of "+j.MemberID), sync.MemberAssignment, why)
	}
	reloadOffsets(t, s, nil)
	check("reloaded")

	// Commits until a rewrite moves the log start past the group's
	// records: the rewrite holds its latest.
	for i := int64(0); heldRecords(t, p) > 0 && i < 200; i++ {
		o, err := p.Offsets()
		require.NoError(t, err)
		if o.LogStart > 0 {
			break
		}
		require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, i))))
	}
	o, err := p.Offsets()
	require.NoError(t, err)
	require.Greater(t, o.LogStart, int64(0), "a rewrite moved the log start")
	reloadOffsets(t, s, nil)
	check("reloaded after a rewrite")
}

// TestNoRewriteWhileATransactionIsOpen: offset commits of a transaction
// still open in the offsets partition (a TxnOffsetCommit's, written with
// its producer's id and epoch) hold compaction back: no rewrite is made,
// and the log start does not move past them, however many dead records
// pile up, until the transaction is decided.
func TestNoRewriteWhileATransactionIsOpen(t *testing.T) {
	_, c, p := newOffsetsServer(t, compactAfter20)
	now := time.Now()
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(records.Batch(now, []kmsg.Record{records.Offset("txn", group.StoredOffset{
		TopicPartition: group.TopicPartition{Topic: "orders", Partition: 0}, Offset: 5, LeaderEpoch: -1, Committed: now})})))
	b.Attributes |= 0x10 // transactional
	b.ProducerID, b.ProducerEpoch = 7, 0
	_, err := p.AppendCoordinator(batchtest.Encode(b))
	require.NoError(t, err)
	_, open := p.FirstUndecidedOffset()
	require.True(t, open)

	for i := range int64(100) {
		require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, i))))
	}
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.LogStart, "nothing dropped")
	assert.Greater(t, heldRecords(t, p), int64(200), "no rewrite: every commit is still held")
}
