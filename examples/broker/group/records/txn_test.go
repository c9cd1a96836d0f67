package records

import (
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/timer"
)

func plain(recs ...kmsg.Record) []byte { return Batch(t0, recs) }

func txn(producer int64, recs ...kmsg.Record) []byte { return TxnBatch(t0, producer, 2, recs) }

// marker is the control batch that ends producer's transaction, as the
// transaction coordinator's WriteTxnMarkers appends it: one record whose
// key is a ControlRecordKey (type 1 commit, 0 abort) and whose value is
// an EndTxnMarker.
func marker(producer int64, commit bool) []byte {
	return controlBatch(producer, kmsg.ControlRecordKey{Type: map[bool]kmsg.ControlRecordKeyType{
		true: kmsg.ControlRecordKeyTypeCommit, false: kmsg.ControlRecordKeyTypeAbort}[commit]})
}

func controlBatch(producer int64, key kmsg.ControlRecordKey) []byte {
	return controlBatchOf(producer, key.AppendTo(nil))
}

func controlBatchOf(producer int64, key []byte) []byte {
	value := kmsg.EndTxnMarker{CoordinatorEpoch: 4}
	rec := kmsg.Record{Key: key, Value: value.AppendTo(nil)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x30, FirstTimestamp: t0.UnixMilli(),
		MaxTimestamp: t0.UnixMilli(), ProducerID: producer, ProducerEpoch: 2, FirstSequence: -1, NumRecords: 1,
		Records: rec.AppendTo(nil)}
	b.Length = int32(49 + len(b.Records))
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// at is o as a replay finds it, its record at position pos.
func at(o group.StoredOffset, pos int64) group.StoredOffset {
	o.Position = pos
	return o
}

func pending(producer int64, o group.StoredOffset, pos int64) group.StoredTxnOffset {
	return group.StoredTxnOffset{ProducerID: producer, StoredOffset: at(o, pos)}
}

func replay(t *testing.T, batches ...[]byte) *Replay {
	t.Helper()
	var r Replay
	_, err := r.Apply(placed(0, batches))
	require.NoError(t, err)
	return &r
}

// TestReplayTxnOffsets: a transactional batch's offsets are pending under
// its producer until the producer's control batch: a commit marker makes
// each the committed offset where its record is newer than the committed
// one's (a commit after the transaction's, before its marker, wins), an
// abort drops them; a group of pending offsets alone goes with them.
func TestReplayTxnOffsets(t *testing.T) {
	log := [][]byte{
		plain(Offset("g", off("t", 0, 1)), Offset("g", off("t", 1, 2))),    // 0, 1
		txn(5, Offset("g", off("t", 0, 10)), Offset("g", off("t", 1, 11))), // 2, 3
		txn(6, Offset("g", off("t", 0, 20))),                               // 4
		plain(Offset("g", off("t", 1, 12))),                                // 5
		txn(7, Offset("only", off("u", 0, 30))),                            // 6
	}
	r := replay(t, log...)
	assert.Equal(t, []group.StoredGroup{
		{Group: "g", Offsets: []group.StoredOffset{at(off("t", 0, 1), 0), at(off("t", 1, 12), 5)},
			TxnOffsets: []group.StoredTxnOffset{pending(5, off("t", 0, 10), 2), pending(5, off("t", 1, 11), 3),
				pending(6, off("t", 0, 20), 4)}},
		{Group: "only", TxnOffsets: []group.StoredTxnOffset{pending(7, off("u", 0, 30), 6)}},
	}, r.Groups())
	assert.Equal(t, int64(2), r.Live(), "pending offsets are not live: a rewrite leaves them out")

	r = replay(t, append(log, marker(5, true), marker(6, false), marker(7, false), marker(8, true))...)
	assert.Equal(t, []group.StoredGroup{
		{Group: "g", Offsets: []group.StoredOffset{at(off("t", 0, 10), 2), at(off("t", 1, 12), 5)}},
	}, r.Groups(), "5 committed (t-1's commit at 5 is newer), 6 and 7 aborted, 8 had nothing")
	assert.Equal(t, int64(11), r.Records(), "the markers are records of the log")
	assert.Equal(t, int64(2), r.Live())

	var again Replay
	_, err := again.Apply(placed(0, r.Rewrite(t0, 100, 1<<20)))
	require.NoError(t, err)
	assert.Equal(t, []group.StoredGroup{
		{Group: "g", Offsets: []group.StoredOffset{at(off("t", 0, 10), 0), at(off("t", 1, 12), 1)}},
	}, again.Groups(), "a committed transaction's offsets are rewritten as any")
}

// TestReplayTombstonesDropTxnOffsets: a partition's tombstone drops the
// offsets pending of it, and a group's all of the group's, as Kafka's
// replay does, so that a later commit marker brings nothing back.
func TestReplayTombstonesDropTxnOffsets(t *testing.T) {
	r := replay(t,
		txn(5, Offset("g", off("t", 0, 10)), Offset("g", off("t", 1, 11)), Offset("h", off("t", 0, 20))),
		plain(OffsetTombstone("g", tp("t", 0))),
		plain(Offset("h", off("t", 1, 1)), GroupTombstone("h")),
		marker(5, true),
	)
	assert.Equal(t, []group.StoredGroup{
		{Group: "g", Offsets: []group.StoredOffset{at(off("t", 1, 11), 1)}},
	}, r.Groups())
}

// TestReplayedTxnOffsetsLoadPending: a coordinator that loads a partition
// replayed with a transaction open finds its offsets pending (unstable to
// a fetch that requires stable offsets) and completes them when the
// marker written after the move comes, as the coordinator that took the
// commit would have.
func TestReplayedTxnOffsetsLoadPending(t *testing.T) {
	r := replay(t,
		plain(Offset("g", off("t", 0, 1)), Offset("g", off("t", 1, 2))),
		txn(5, Offset("g", off("t", 0, 10)), Offset("g", off("t", 1, 11))),
		plain(Offset("g", off("t", 1, 12))),
	)
	c, err := group.New(group.WithClock(timer.NewManualClock(0)), group.WithWallClock(func() time.Time { return t0 }))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Load(r.Groups())
	require.NoError(t, err)
	tps := []group.TopicPartition{tp("t", 0), tp("t", 1)}
	got, gerr := c.FetchOffsets("g", tps, true)
	require.Nil(t, gerr)
	assert.Equal(t, kerr.UnstableOffsetCommit, got[0].Err)
	assert.Equal(t, kerr.UnstableOffsetCommit, got[1].Err)
	got, _ = c.FetchOffsets("g", tps, false)
	assert.Equal(t, []int64{1, 12}, []int64{got[0].Offset, got[1].Offset}, "the committed offsets meanwhile")

	c.CompleteTxn(func(string) bool { return true }, 5, true)
	got, _ = c.FetchOffsets("g", tps, true)
	assert.Nil(t, got[0].Err)
	assert.Equal(t, []int64{10, 12}, []int64{got[0].Offset, got[1].Offset},
		"t-0 is the transaction's; t-1's commit after it stays, as in the replay of the marker")
}

// TestReplayControlBatches: a control batch that is not a transaction's
// marker, or whose key cannot be read, is not one this package reads; a
// marker's key of a newer version is read as version 0, as Kafka reads
// it.
func TestReplayControlBatches(t *testing.T) {
	for _, raw := range [][]byte{
		controlBatch(5, kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyTypeQuorumReassignment}),
		controlBatch(5, kmsg.ControlRecordKey{Version: -1, Type: kmsg.ControlRecordKeyTypeCommit}),
		controlBatchOf(5, []byte{0, 0}),
	} {
		var r Replay
		_, err := r.Apply(placed(0, [][]byte{raw}))
		assert.ErrorIs(t, err, ErrRecord)
	}
	r := replay(t, txn(5, Offset("g", off("t", 0, 10))),
		controlBatch(5, kmsg.ControlRecordKey{Version: 1, Type: kmsg.ControlRecordKeyTypeCommit}))
	assert.Equal(t, []group.StoredGroup{{Group: "g", Offsets: []group.StoredOffset{at(off("t", 0, 10), 0)}}}, r.Groups())
}

// TestTxnBatchIsKafkas: a transaction's offsets are a transactional batch
// of the producer, without a sequence, as Kafka's coordinator writes it.
func TestTxnBatchIsKafkas(t *testing.T) {
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(TxnBatch(t0, 42, 7, []kmsg.Record{Offset("g", off("t", 0, 1))})))
	assert.Equal(t, int16(0x10), b.Attributes, "transactional, not control, uncompressed")
	assert.Equal(t, int64(42), b.ProducerID)
	assert.Equal(t, int16(7), b.ProducerEpoch)
	assert.Equal(t, int32(-1), b.FirstSequence)
	raw := TxnBatch(t0, 42, 7, []kmsg.Record{Offset("g", off("t", 0, 1))})
	assert.Equal(t, int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))), b.CRC)
}
