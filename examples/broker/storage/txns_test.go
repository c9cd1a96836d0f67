package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// txnAppend appends a transactional batch of producer id at epoch and seq,
// and returns where it went.
func txnAppend(t *testing.T, p *Partition, id int64, epoch int16, seq int32, values ...string) AppendResult {
	t.Helper()
	res, err := p.Append(batchtest.Transactional(id, epoch, seq, 1, values...))
	require.NoError(t, err)
	return res
}

// plain appends a batch from no producer.
func plain(t *testing.T, p *Partition, values ...string) AppendResult {
	t.Helper()
	res, err := p.Append(batchtest.Values(1, values...))
	require.NoError(t, err)
	return res
}

// mark appends producer id's transaction marker, at epoch, from a
// coordinator at epoch 0.
func mark(t *testing.T, p *Partition, id int64, epoch int16, commit bool) AppendResult {
	t.Helper()
	res, err := p.AppendMarker(Marker{ProducerID: id, ProducerEpoch: epoch, Commit: commit})
	require.NoError(t, err)
	return res
}

// readCommitted reads p from offset with read_committed and returns the
// offsets of the records read and the aborted transactions.
func readCommitted(t *testing.T, p *Partition, offset int64) ([]int64, []AbortedTxn) {
	t.Helper()
	r, err := p.Read(offset, ReadCommitted, 1<<20, true)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	var offs []int64
	for _, rec := range recs {
		offs = append(offs, rec.Offset)
	}
	return offs, r.Aborted
}

func TestLastStableStaysAtAnOpenTransaction(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	plain(t, p, "a")                     // 0
	txnAppend(t, p, 1, 0, 0, "t1", "t2") // 1-2
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 1, LogEnd: 3}, offsetsOf(t, p),
		"the transaction's first offset bounds read_committed")
	first, epoch, ok := p.OngoingTxn(1)
	assert.True(t, ok)
	assert.Equal(t, []int64{1, 0}, []int64{first, int64(epoch)}, "its first offset and the producer's epoch")

	plain(t, p, "b")                    // 3
	_, err := produce(t, p, 2, 0, 0, 1) // 4, idempotent, another producer
	require.NoError(t, err)
	txnAppend(t, p, 1, 0, 2, "t3") // 5: the same transaction goes on
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 6, LastStable: 1, LogEnd: 6}, offsetsOf(t, p),
		"other producers' appends do not move it")
	offs, aborted := readCommitted(t, p, 0)
	assert.Equal(t, []int64{0}, offs, "read_committed stops before the open transaction")
	assert.Nil(t, aborted)
	n, err := p.Readable(0, ReadCommitted, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, len(batchtest.Values(1, "a")), n, "Readable counts up to the last stable offset")
	_, _, ok = p.OngoingTxn(2)
	assert.False(t, ok, "an idempotent producer has no transaction")
}

func TestCommitMarkerMovesTheLastStableOffset(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 0, 0, "t1") // 0
	plain(t, p, "a")               // 1
	res := mark(t, p, 1, 0, true)  // 2
	assert.Equal(t, AppendResult{BaseOffset: 2, LastOffset: 2}, res)
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 3, LogEnd: 3}, offsetsOf(t, p),
		"committed: stable up to the high watermark")
	_, _, ok := p.OngoingTxn(1)
	assert.False(t, ok)
	offs, aborted := readCommitted(t, p, 0)
	assert.Equal(t, []int64{0, 1, 2}, offs, "the marker is read too, as Kafka serves it")
	assert.Nil(t, aborted, "nothing aborted")

	r, err := p.Read(2, ReadReplica, 1<<20, true)
	require.NoError(t, err)
	stored, err := ParseStoredBatch(r.Records)
	require.NoError(t, err)
	info := stored.Info()
	assert.Equal(t, ControlCommit, info.Control)
	assert.True(t, info.Transactional)
	assert.Equal(t, []int64{1, 0, -1}, []int64{info.ProducerID, int64(info.ProducerEpoch), int64(info.FirstSequence)})
}

func TestAbortMarkerIndexesTheTransaction(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	plain(t, p, "a")                     // 0
	txnAppend(t, p, 1, 0, 0, "t1", "t2") // 1-2
	txnAppend(t, p, 2, 0, 0, "u1")       // 3, another producer's transaction
	mark(t, p, 1, 0, false)              // 4: abort
	assert.Equal(t, int64(3), offsetsOf(t, p).LastStable, "the other transaction is still open")
	assert.Equal(t, []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 4, LastStableOffset: 3}}, p.txns.aborted,
		"indexed with the last stable offset at its completion: the other transaction's first offset")

	offs, aborted := readCommitted(t, p, 0)
	assert.Equal(t, []int64{0, 1, 2}, offs)
	assert.Equal(t, []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 4, LastStableOffset: 3}}, aborted,
		"the aborted transaction overlaps the read")

	mark(t, p, 2, 0, true) // 5
	assert.Equal(t, int64(6), offsetsOf(t, p).LastStable)
	offs, aborted = readCommitted(t, p, 0)
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5}, offs)
	require.Len(t, aborted, 1)
	assert.Equal(t, []int64{1, 1}, []int64{aborted[0].ProducerID, aborted[0].FirstOffset})

	_, aborted = readCommitted(t, p, 4)
	assert.Len(t, aborted, 1, "a read from its marker still overlaps it")
	_, aborted = readCommitted(t, p, 5)
	assert.Nil(t, aborted, "a read after its marker does not")
	_, aborted = readCommitted(t, p, 6)
	assert.Nil(t, aborted, "nor one that reads nothing")

	r, err := p.Read(0, ReadUncommitted, 1<<20, true)
	require.NoError(t, err)
	assert.Nil(t, r.Aborted, "read_uncommitted gets no aborted transactions")
	r, err = p.Read(0, ReadReplica, 1<<20, true)
	require.NoError(t, err)
	assert.Nil(t, r.Aborted, "nor does a follower")
}

// TestAbortedTxnsBoundedByTheRead: an aborted transaction that starts after
// the last batch a read returns is not listed.
func TestAbortedTxnsBoundedByTheRead(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	plain(t, p, "a")                            // 0
	txnAppend(t, p, 1, 0, 0, "t1")              // 1
	mark(t, p, 1, 0, false)                     // 2
	r, err := p.Read(0, ReadCommitted, 1, true) // minOne: the first batch only
	require.NoError(t, err)
	assert.Len(t, r.Records, len(batchtest.Values(1, "a")))
	assert.Nil(t, r.Aborted, "the transaction starts after what was read")
}

func TestLastStableWaitsForTheHighWatermark(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	p.SetHighWatermarkManaged(true)
	plain(t, p, "a") // 0
	require.True(t, p.AdvanceHighWatermark(1))
	txnAppend(t, p, 1, 0, 0, "t1") // 1
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 1, LastStable: 1, LogEnd: 2}, offsetsOf(t, p))
	require.True(t, p.AdvanceHighWatermark(2))
	assert.Equal(t, int64(1), offsetsOf(t, p).LastStable, "open")

	mark(t, p, 1, 0, true) // 2
	plain(t, p, "b")       // 3
	assert.Equal(t, int64(1), offsetsOf(t, p).LastStable, "complete, but its marker is not below the high watermark")
	require.True(t, p.AdvanceHighWatermark(3))
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 3, LogEnd: 4}, offsetsOf(t, p),
		"the high watermark passed the marker: stable up to it")
	require.True(t, p.AdvanceHighWatermark(4))
	assert.Equal(t, int64(4), offsetsOf(t, p).LastStable)
}

func TestLastStableOnAFollowerFollowsItsHighWatermark(t *testing.T) {
	leader, follower := leaderAndFollower(t, forever)
	txnAppend(t, leader, 1, 0, 0, "t1") // 0
	mark(t, leader, 1, 0, false)        // 1
	plain(t, leader, "a")               // 2
	_, err := follower.AppendReplica(replicaRead(t, leader, 0))
	require.NoError(t, err)
	assert.Equal(t, int64(0), offsetsOf(t, follower).LastStable)
	follower.SetHighWatermark(1)
	assert.Equal(t, int64(0), offsetsOf(t, follower).LastStable, "the marker is not below the high watermark")
	follower.SetHighWatermark(2)
	assert.Equal(t, int64(2), offsetsOf(t, follower).LastStable)
}

func TestMarkerFencing(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 3, 0, "t1") // 0
	before := offsetsOf(t, p)
	_, err := p.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 2, CoordinatorEpoch: 0, Commit: true})
	assert.ErrorIs(t, err, ErrInvalidProducerEpoch, "a marker older than the producer's epoch")
	assert.Equal(t, before, offsetsOf(t, p), "nothing appended")

	_, err = p.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 3, CoordinatorEpoch: 5, Commit: true}) // 1
	require.NoError(t, err)
	txnAppend(t, p, 1, 3, 1, "t2") // 2
	before = offsetsOf(t, p)
	_, err = p.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 3, CoordinatorEpoch: 4, Commit: false})
	assert.ErrorIs(t, err, ErrCoordinatorFenced, "a coordinator older than the last one the producer saw")
	assert.Equal(t, before, offsetsOf(t, p), "nothing appended")
	first, _, ok := p.OngoingTxn(1)
	assert.True(t, ok, "the transaction is still open")
	assert.Equal(t, int64(2), first)

	// A bumped epoch (the coordinator aborting a timed-out transaction)
	// fences the producer's older epoch.
	_, err = p.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 4, CoordinatorEpoch: 5, Commit: false}) // 3
	require.NoError(t, err)
	_, err = p.Append(batchtest.Transactional(1, 3, 2, 1, "late"))
	assert.ErrorIs(t, err, ErrInvalidProducerEpoch)
	assert.Equal(t, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4}}, p.txns.aborted)
}

func TestMarkerWithoutTransactionIsWritten(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	plain(t, p, "a")               // 0
	res := mark(t, p, 9, 0, false) // 1: producer 9 wrote nothing here
	assert.Equal(t, int64(1), res.BaseOffset, "written, as Kafka writes it")
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 2, LastStable: 2, LogEnd: 2}, offsetsOf(t, p))
	assert.Empty(t, p.txns.aborted, "no transaction to index")
	assert.Equal(t, []ProducerState{{ProducerID: 9, ProducerEpoch: 0, LastSequence: -1,
		LastTimestamp: clockOf(t, p).UnixMilli(), CoordinatorEpoch: 0, CurrentTxnStartOffset: -1}}, p.Producers())
}

// clockOf returns the time of p's store's clock.
func clockOf(t *testing.T, p *Partition) time.Time {
	t.Helper()
	return p.cfg.clock.Now()
}

func TestNonTransactionalBatchDuringATransaction(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 0, 0, "t1") // 0
	before := offsetsOf(t, p)
	_, err := produce(t, p, 1, 0, 1, 1)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "an idempotent batch while its producer's transaction is open")
	assert.Equal(t, before, offsetsOf(t, p), "nothing appended")
	mark(t, p, 1, 0, true) // 1
	res, err := produce(t, p, 1, 0, 1, 1)
	require.NoError(t, err, "once the transaction is complete")
	assert.Equal(t, int64(2), res.BaseOffset)
}

func TestTransactionalBatchesAreDeduplicated(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 0, 0, "t1", "t2") // 0-1
	res := txnAppend(t, p, 1, 0, 0, "t1", "t2")
	assert.True(t, res.Duplicate, "a retry of a transactional batch")
	assert.Equal(t, int64(0), res.BaseOffset)
	_, err := p.Append(batchtest.Transactional(1, 0, 5, 1, "gap"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
}

func TestAppendCoordinator(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	coordinated := batchtest.Transactional(5, 1, -1, 1, "commit")
	_, err := p.Append(coordinated)
	assert.ErrorIs(t, err, ErrInvalidRecord, "a client's producer id needs a sequence")

	res, err := p.AppendCoordinator(coordinated) // 0
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.BaseOffset)
	res, err = p.AppendCoordinator(batchtest.Transactional(5, 1, -1, 1, "commit")) // 1
	require.NoError(t, err)
	assert.False(t, res.Duplicate, "no sequence: no duplicate")
	assert.Equal(t, int64(1), res.BaseOffset)
	first, epoch, ok := p.OngoingTxn(5)
	assert.True(t, ok)
	assert.Equal(t, []int64{0, 1}, []int64{first, int64(epoch)})
	assert.Equal(t, int64(0), offsetsOf(t, p).LastStable, "its transaction bounds read_committed")

	_, err = p.AppendCoordinator(batchtest.Transactional(5, 0, -1, 1, "stale"))
	assert.ErrorIs(t, err, ErrInvalidProducerEpoch, "the producer's epoch still fences")
	_, err = p.AppendCoordinator(batchtest.Idempotent(5, 1, 0, 1, "plain"))
	assert.ErrorIs(t, err, ErrInvalidTxnState, "not transactional, while its transaction is open")
	_, err = p.AppendCoordinator(batchtest.Marker(5, 1, true, 0, 1))
	assert.ErrorIs(t, err, ErrInvalidRecord, "markers go through AppendMarker")

	res, err = p.AppendCoordinator(batchtest.Values(1, "group")) // 2
	require.NoError(t, err, "a batch of no producer, as Append")
	assert.Equal(t, int64(2), res.BaseOffset)
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 0, LogEnd: 3}, offsetsOf(t, p))
	mark(t, p, 5, 1, true) // 3
	assert.Equal(t, int64(4), offsetsOf(t, p).LastStable)
	undecided, open := p.FirstUndecidedOffset()
	assert.False(t, open)
	assert.Equal(t, int64(-1), undecided)
}

func TestProducerExpiryKeepsOpenTransactions(t *testing.T) {
	p, clk := newTestPartition(t, forever, WithProducerState(5, time.Hour))
	txnAppend(t, p, 1, 0, 0, "t1") // 0
	_, err := produce(t, p, 2, 0, 0, 1)
	require.NoError(t, err)
	clk.Advance(2 * time.Hour)
	require.NoError(t, p.sweep(clk.Now()))
	ids := func() []int64 {
		var out []int64
		for _, s := range p.Producers() {
			out = append(out, s.ProducerID)
		}
		return out
	}
	assert.Equal(t, []int64{1}, ids(), "the idle producer with an open transaction is kept")
	_, _, ok := p.OngoingTxn(1)
	assert.True(t, ok)

	mark(t, p, 1, 0, true)
	clk.Advance(2 * time.Hour)
	require.NoError(t, p.sweep(clk.Now()))
	assert.Empty(t, ids(), "complete, it expires as any producer")
}

func TestProducers(t *testing.T) {
	p, clk := newTestPartition(t, forever)
	_, err := p.Append(batchtest.Transactional(3, 2, 0, 500, "a", "b"))
	require.NoError(t, err)
	_, err = p.Append(batchtest.Idempotent(1, 0, 7, 400, "c"))
	require.NoError(t, err)
	_, err = p.AppendMarker(Marker{ProducerID: 4, ProducerEpoch: 1, CoordinatorEpoch: 6, Commit: false})
	require.NoError(t, err)
	assert.Equal(t, []ProducerState{
		{ProducerID: 1, ProducerEpoch: 0, LastSequence: 7, LastTimestamp: 400, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
		{ProducerID: 3, ProducerEpoch: 2, LastSequence: 1, LastTimestamp: 500, CoordinatorEpoch: -1, CurrentTxnStartOffset: 0},
		{ProducerID: 4, ProducerEpoch: 1, LastSequence: -1, LastTimestamp: clk.Now().UnixMilli(), CoordinatorEpoch: 6, CurrentTxnStartOffset: -1},
	}, p.Producers(), "by producer id")
	undecided, open := p.FirstUndecidedOffset()
	assert.True(t, open)
	assert.Equal(t, int64(0), undecided)
}

// TestReopenRebuildsTransactions reopens a partition's memory log: the
// open transaction, the last stable offset and the aborted index come back
// from the batches.
func TestReopenRebuildsTransactions(t *testing.T) {
	first, _ := newTestPartition(t, forever)
	plain(t, first, "a")                                                                       // 0
	txnAppend(t, first, 1, 0, 0, "t1")                                                         // 1
	txnAppend(t, first, 2, 0, 0, "u1")                                                         // 2
	_, err := first.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 3}) // 3: abort
	require.NoError(t, err)
	plain(t, first, "b") // 4
	want := offsetsOf(t, first)
	require.Equal(t, int64(2), want.LastStable)
	wantAborted := first.txns.aborted
	kept := first.log

	s, _ := newTestStore(t, WithLogOpener(func(string, TopicID, int32) (Log, error) { return kept, nil }))
	topic, err := s.CreateTopic("t", 1, forever)
	require.NoError(t, err)
	p := topic.Partitions[0]
	assert.Equal(t, want, offsetsOf(t, p), "the open transaction bounds the last stable offset again")
	assert.Equal(t, wantAborted, p.txns.aborted, "the aborted index is rebuilt")
	_, aborted := readCommitted(t, p, 0)
	assert.Equal(t, wantAborted, aborted)
	_, err = p.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 2, Commit: true})
	assert.ErrorIs(t, err, ErrCoordinatorFenced, "the coordinator epoch is rebuilt")
	_, err = produce(t, p, 2, 0, 1, 1)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "and the open transaction")
	mark(t, p, 2, 0, true) // 5
	assert.Equal(t, int64(6), offsetsOf(t, p).LastStable)
}

func TestTruncateToReopensTheTransaction(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 0, 0, "t1") // 0
	mark(t, p, 1, 0, false)        // 1
	plain(t, p, "a")               // 2
	require.Len(t, p.txns.aborted, 1)
	require.Equal(t, int64(3), offsetsOf(t, p).LastStable)

	require.NoError(t, p.TruncateTo(1))
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 1, LastStable: 0, LogEnd: 1}, offsetsOf(t, p),
		"the marker is gone: the transaction is open again")
	first, _, ok := p.OngoingTxn(1)
	assert.True(t, ok)
	assert.Equal(t, int64(0), first)
	assert.Empty(t, p.txns.aborted, "and no longer aborted")

	mark(t, p, 1, 0, true) // 1 again
	assert.Equal(t, int64(2), offsetsOf(t, p).LastStable)
	require.NoError(t, p.TruncateFullyAndStartAt(10))
	assert.Equal(t, Offsets{LogStart: 10, HighWatermark: 10, LastStable: 10, LogEnd: 10}, offsetsOf(t, p))
	assert.Empty(t, p.Producers())
}

func TestLogStartDropsAbortedTxns(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	txnAppend(t, p, 1, 0, 0, "t1") // 0
	mark(t, p, 1, 0, false)        // 1
	txnAppend(t, p, 2, 0, 0, "u1") // 2
	mark(t, p, 2, 0, false)        // 3
	txnAppend(t, p, 3, 0, 0, "v1") // 4, open
	plain(t, p, "a")               // 5
	require.Len(t, p.txns.aborted, 2)

	start, err := p.AdvanceLogStart(2)
	require.NoError(t, err)
	require.Equal(t, int64(2), start)
	assert.Equal(t, []AbortedTxn{{ProducerID: 2, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4}}, p.txns.aborted,
		"the entry whose marker is before the log start goes")

	start, err = p.AdvanceLogStart(5)
	require.NoError(t, err)
	require.Equal(t, int64(5), start)
	assert.Empty(t, p.txns.aborted)
	assert.Equal(t, Offsets{LogStart: 5, HighWatermark: 6, LastStable: 5, LogEnd: 6}, offsetsOf(t, p),
		"the open transaction's first batch is gone: the last stable offset is the log start")
	first, _, ok := p.OngoingTxn(3)
	assert.True(t, ok, "still open")
	assert.Equal(t, int64(4), first)
}

// TestFollowerTracksTransactions replicates a leader's transactional
// batches and markers: the follower's last stable offset, aborted index and
// producers are the leader's, and it fences as the leader did once it
// leads.
func TestFollowerTracksTransactions(t *testing.T) {
	leader, follower := leaderAndFollower(t, forever)
	plain(t, leader, "a")                                                                       // 0
	txnAppend(t, leader, 1, 0, 0, "t1", "t2")                                                   // 1-2
	txnAppend(t, leader, 2, 0, 0, "u1")                                                         // 3
	_, err := leader.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 7}) // 4: abort
	require.NoError(t, err)
	txnAppend(t, leader, 1, 0, 2, "t3")                                                                      // 5: a new transaction
	_, err = leader.AppendMarker(Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 7, Commit: true}) // 6
	require.NoError(t, err)

	records := replicaRead(t, leader, 0)
	starts, _ := batchAt(records)
	_, err = follower.AppendReplica(records[:starts[4]])
	require.NoError(t, err)
	_, err = follower.AppendReplica(records[starts[4]:])
	require.NoError(t, err)
	follower.SetHighWatermark(offsetsOf(t, leader).HighWatermark)

	assert.Equal(t, offsetsOf(t, leader), offsetsOf(t, follower))
	assert.Equal(t, int64(5), offsetsOf(t, follower).LastStable, "producer 1's second transaction is open")
	assert.Equal(t, leader.txns.aborted, follower.txns.aborted)
	assert.Equal(t, leader.Producers(), follower.Producers())
	_, aborted := readCommitted(t, follower, 0)
	assert.Equal(t, []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 4, LastStableOffset: 3}}, aborted)

	_, err = follower.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 6, Commit: true})
	assert.ErrorIs(t, err, ErrCoordinatorFenced, "the follower knows the coordinator's epoch")
	_, err = produce(t, follower, 1, 0, 3, 1)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "and the open transaction")
}

// TestOffsetQueue checks the queue of first offsets against a plain set,
// through removals in every order: its smallest, and its size, which the
// sweep of the offsets removed behind one kept bounds.
func TestOffsetQueue(t *testing.T) {
	var q offsetQueue
	in := map[int64]bool{}
	next := int64(0)
	// A pseudo-random walk, fixed so that a failure repeats.
	state := uint32(1)
	rand := func(n int) int {
		state = state*1664525 + 1013904223
		return int(state>>8) % n
	}
	q.add(next) // held by a transaction that never ends
	in[next] = true
	for step := range 5000 {
		if rand(3) > 0 || len(in) < 2 {
			next += int64(1 + rand(3))
			q.add(next)
			in[next] = true
		} else {
			var pick []int64
			for off := range in {
				if off != 0 {
					pick = append(pick, off)
				}
			}
			if len(pick) == 0 {
				continue
			}
			off := pick[rand(len(pick))]
			q.remove(off)
			q.remove(off) // twice: nothing more
			delete(in, off)
		}
		got, ok := q.min()
		require.True(t, ok, "step %d", step)
		assert.Equal(t, int64(0), got, "step %d: the offset kept is the smallest", step)
		require.Equal(t, len(in), q.live, "step %d", step)
		assert.LessOrEqual(t, len(q.offs), 2*q.live+17, "step %d: the offsets removed are swept", step)
	}
	q.remove(0)
	for len(in) > 1 {
		var smallest int64 = -1
		for off := range in {
			if off != 0 && (smallest < 0 || off < smallest) {
				smallest = off
			}
		}
		got, ok := q.min()
		require.True(t, ok)
		require.Equal(t, smallest, got)
		q.remove(smallest)
		delete(in, smallest)
	}
	_, ok := q.min()
	assert.False(t, ok, "empty")
	assert.Panics(t, func() { q.add(next); q.add(next) }, "offsets are added in increasing order")
}
