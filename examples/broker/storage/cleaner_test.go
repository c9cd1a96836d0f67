package storage

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// compacted is a topic config that compacts at once: no lag, any dirty
// ratio, tombstones kept an hour.
var compacted = TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20,
	Cleanup: CleanupCompact, DeleteRetention: time.Hour}

// tomb is the value keyed writes as a null: a tombstone.
const tomb = "<null>"

// keyedRecords returns records of key/value pairs, kvs alternating; a
// value of tomb is a null.
func keyedRecords(kvs ...string) []kmsg.Record {
	recs := make([]kmsg.Record, 0, len(kvs)/2)
	for i := 0; i+1 < len(kvs); i += 2 {
		r := kmsg.Record{OffsetDelta: int32(i / 2), Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}
		if kvs[i+1] == tomb {
			r.Value = nil
		}
		recs = append(recs, r)
	}
	return recs
}

// keyed returns a batch of key/value pairs (see keyedRecords) timestamped
// ts, from no producer.
func keyed(ts int64, kvs ...string) []byte {
	recs := keyedRecords(kvs...)
	b := batchtest.Header(len(recs), ts)
	b.Records = batchtest.Records(recs...)
	return batchtest.Encode(b)
}

// txnKeyed returns a transactional batch of key/value pairs (see
// keyedRecords) from producer 7, epoch 0, first sequence seq, at ts.
func txnKeyed(ts int64, seq int32, kvs ...string) []byte {
	recs := keyedRecords(kvs...)
	b := batchtest.Header(len(recs), ts)
	b.Attributes = 0x10
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = 7, 0, seq
	b.Records = batchtest.Records(recs...)
	return batchtest.Encode(b)
}

// kv is a record as a test reads it back: offset, key, value (tomb for a
// null).
type kv struct {
	Offset     int64
	Key, Value string
}

// readAll returns every record of p from its log start to its high
// watermark, compressed batches decoded too, as a consumer reads them.
func readAll(t *testing.T, p *Partition) []kv {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	res, err := p.Read(o.LogStart, ReadUncommitted, 1<<30, true)
	require.NoError(t, err)
	var out []kv
	require.NoError(t, eachBatch(res.Records, func(d *decodedBatch) error {
		for _, r := range d.recs { // none for a marker
			v := string(r.Value)
			if r.Value == nil {
				v = tomb
			}
			out = append(out, kv{d.info.BaseOffset + int64(r.OffsetDelta), string(r.Key), v})
		}
		return nil
	}))
	return out
}

// appendAll appends each batch to p.
func appendAll(t *testing.T, p *Partition, batches ...[]byte) {
	t.Helper()
	for _, b := range batches {
		_, err := p.Append(b)
		require.NoError(t, err)
	}
}

func TestCleanKeepsEachKeysLatestAtItsOffset(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	appendAll(t, p,
		keyed(now, "a", "1", "b", "1"), // 0, 1
		keyed(now, "a", "2", "c", "1"), // 2, 3
		keyed(now, "b", "2", "a", "3"), // 4, 5
		keyed(now, "d", "1"),           // 6: the active segment, never cleaned
	)
	before, err := p.Offsets()
	require.NoError(t, err)

	st, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, 2, st.Segments, "the first two batches lose records; the third keeps both")
	assert.Equal(t, int64(3), st.RecordsRemoved)
	assert.Equal(t, []kv{{3, "c", "1"}, {4, "b", "2"}, {5, "a", "3"}, {6, "d", "1"}}, readAll(t, p),
		"each key's latest value, at its own offset")
	after, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, before, after, "offsets preserved: the log start stays although its batch went")

	res, err := p.Read(1, ReadUncommitted, 1<<20, true)
	require.NoError(t, err)
	recs, err := batchtest.Decode(res.Records)
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	assert.Equal(t, int64(3), recs[0].Offset, "a read from a removed offset starts at the next record kept")

	again, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Zero(t, again.Segments, "nothing new is dirty: a second pass writes nothing")
}

func TestCleanTombstonesStayForDeleteRetention(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	appendAll(t, p,
		keyed(now, "a", "1", "b", "1"),
		keyed(now, "a", tomb),
		keyed(now, "z", "1"), // active
	)
	_, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{1, "b", "1"}, {2, "a", tomb}, {3, "z", "1"}}, readAll(t, p),
		"the tombstone is kept, its key's older value gone")

	clk.Advance(59 * time.Minute)
	_, err = p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Contains(t, readAll(t, p), kv{2, "a", tomb}, "within delete.retention.ms of its first cleaning")

	clk.Advance(2 * time.Minute)
	appendAll(t, p, keyed(clk.Now().UnixMilli(), "y", "1")) // a dirty segment for the next pass
	_, err = p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{1, "b", "1"}, {3, "z", "1"}, {4, "y", "1"}}, readAll(t, p),
		"past its delete horizon the tombstone goes")
}

func TestCleanRespectsMinCompactionLag(t *testing.T) {
	cfg := compacted
	cfg.MinCompactionLag = time.Hour
	p, clk := newTestPartition(t, cfg)
	now := clk.Now().UnixMilli()
	appendAll(t, p,
		keyed(now-2*3600_000, "a", "1"),
		keyed(now-2*3600_000, "a", "2"),
		keyed(now, "a", "3"), // younger than the lag: it and what follows wait
		keyed(now, "a", "4"),
		keyed(now, "z", "1"),
	)
	_, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{1, "a", "2"}, {2, "a", "3"}, {3, "a", "4"}, {4, "z", "1"}}, readAll(t, p),
		"only the segments older than min.compaction.lag.ms are cleaned")

	clk.Advance(2 * time.Hour)
	_, err = p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{3, "a", "4"}, {4, "z", "1"}}, readAll(t, p), "an hour on, the rest")
}

func TestCleanStopsAtTheLastStableOffset(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	txn := func(seq int32, kvs ...string) []byte { return txnKeyed(now, seq, kvs...) }
	appendAll(t, p,
		keyed(now, "a", "1"),
		txn(0, "a", "2"), // opens a transaction: the last stable offset stays at 1
		keyed(now, "a", "3"),
		keyed(now, "z", "1"),
	)
	_, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Len(t, readAll(t, p), 4, "nothing at or past the first unstable offset is cleaned")

	_, err = p.AppendMarker(Marker{ProducerID: 7, ProducerEpoch: 0, Commit: true})
	require.NoError(t, err)
	appendAll(t, p, keyed(now, "y", "1"))
	_, err = p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{2, "a", "3"}, {3, "z", "1"}, {5, "y", "1"}}, readAll(t, p),
		"committed: the transactional record is as any other, and a later value took its place")
}

func TestCleanDropsAbortedRecords(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	txn := func(seq int32, kvs ...string) []byte { return txnKeyed(now, seq, kvs...) }
	appendAll(t, p, keyed(now, "a", "1"), txn(0, "a", "2", "b", "2"))
	_, err := p.AppendMarker(Marker{ProducerID: 7, ProducerEpoch: 0, Commit: false})
	require.NoError(t, err)
	appendAll(t, p, keyed(now, "z", "1"), keyed(now, "y", "1"))
	_, err = p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{0, "a", "1"}, {4, "z", "1"}, {5, "y", "1"}}, readAll(t, p),
		"the aborted records go, and shadow nothing: a's committed value stays")
	res, err := p.Read(0, ReadCommitted, 1<<20, true)
	require.NoError(t, err)
	assert.Equal(t, []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}}, res.Aborted,
		"a read_committed consumer still gets the aborted index, the marker being kept")
}

func TestCleanKeepsAProducersLastBatchEmpty(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	idem := func(seq int32, kvs ...string) []byte {
		recs := keyedRecords(kvs...)
		b := batchtest.Header(len(recs), now)
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = 9, 0, seq
		b.Records = batchtest.Records(recs...)
		return batchtest.Encode(b)
	}
	appendAll(t, p, idem(0, "a", "1", "b", "1"), keyed(now, "a", "2", "b", "2"), keyed(now, "z", "1"))
	_, err := p.Clean(clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []kv{{2, "a", "2"}, {3, "b", "2"}, {4, "z", "1"}}, readAll(t, p))
	var infos []BatchInfo
	require.NoError(t, p.log.Scan(0, func(b BatchInfo) bool { infos = append(infos, b); return true }))
	require.Len(t, infos, 3, "the producer's last batch stays, empty, for its sequence")
	assert.Equal(t, BatchInfo{BaseOffset: 0, LastOffset: 1, ProducerID: 9, FirstSequence: 0, LastSequence: 1},
		BatchInfo{BaseOffset: infos[0].BaseOffset, LastOffset: infos[0].LastOffset, ProducerID: infos[0].ProducerID,
			FirstSequence: infos[0].FirstSequence, LastSequence: infos[0].LastSequence})

	res, err := p.Append(idem(0, "a", "1", "b", "1"))
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "a retry of the emptied batch is still known")
	assert.Equal(t, int64(0), res.BaseOffset)
}

func TestCleanCompressedBatches(t *testing.T) {
	for name, codec := range batchtest.Codecs {
		t.Run(name, func(t *testing.T) {
			p, clk := newTestPartition(t, compacted)
			now := clk.Now().UnixMilli()
			zipped := func(kvs ...string) []byte {
				recs := keyedRecords(kvs...)
				b := batchtest.Header(len(recs), now)
				b.Attributes = codec
				b.Records = batchtest.Compress(codec, batchtest.Records(recs...))
				return batchtest.Encode(b)
			}
			appendAll(t, p, zipped("a", "1", "b", "1", "c", "1"), zipped("a", "2"), keyed(now, "z", "1"))
			_, err := p.Clean(clk.Now())
			require.NoError(t, err)
			assert.Equal(t, []kv{{1, "b", "1"}, {2, "c", "1"}, {3, "a", "2"}, {4, "z", "1"}}, readAll(t, p))
			var first BatchInfo
			require.NoError(t, p.log.Scan(0, func(b BatchInfo) bool { first = b; return false }))
			res, err := p.Read(0, ReadUncommitted, first.Size, false)
			require.NoError(t, err)
			attrs := int16(res.Records[attributesAt])<<8 | int16(res.Records[attributesAt+1])
			assert.Equal(t, codec, attrs&attrCompression, "re-compressed with the batch's own codec")
		})
	}
}

func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	_, err := p.Append(batchtest.Values(clk.Now().UnixMilli(), "x"))
	assert.ErrorIs(t, err, ErrInvalidRecord)
	assert.ErrorContains(t, err, "Compacted topic cannot accept message without key")
	_, err = p.Append(batchtest.CompressedValues(4, clk.Now().UnixMilli(), "x"))
	assert.ErrorIs(t, err, ErrInvalidRecord, "compressed too")
	_, err = p.Append(keyed(clk.Now().UnixMilli(), "k", "x"))
	assert.NoError(t, err)
}

func TestCompactOnlyTopicIgnoresRetention(t *testing.T) {
	s, clk := newTestStore(t)
	cfg := compacted
	cfg.Retention = time.Minute
	tp, err := s.CreateTopic("c", 1, cfg)
	require.NoError(t, err)
	p := tp.Partitions[0]
	appendAll(t, p, keyed(clk.Now().UnixMilli(), "a", "1"), keyed(clk.Now().UnixMilli(), "b", "1"))
	clk.Advance(time.Hour)
	require.NoError(t, s.Sweep())
	o, _ := p.Offsets()
	assert.Zero(t, o.LogStart, "cleanup.policy=compact: retention deletes nothing")

	cfg.Cleanup = CleanupCompactDelete
	_, err = s.AlterTopicConfig(tp.ID, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Sweep())
	o, _ = p.Offsets()
	assert.Equal(t, int64(2), o.LogStart, "compact,delete: retention applies as well")
}

func TestStoreCleanPicksByDirtyRatio(t *testing.T) {
	s, clk := newTestStore(t)
	cfg := compacted
	cfg.DirtyRatio = 0.5
	tp, err := s.CreateTopic("c", 1, cfg)
	require.NoError(t, err)
	plain, err := s.CreateTopic("d", 1, forever)
	require.NoError(t, err)
	p, now := tp.Partitions[0], clk.Now().UnixMilli()
	for i := range 6 {
		appendAll(t, p, keyed(now, "k", fmt.Sprint(i)))
	}
	appendAll(t, plain.Partitions[0], keyed(now, "k", "1"), keyed(now, "k", "2"), keyed(now, "k", "3"))
	assert.InDelta(t, 1.0, p.DirtyRatio(clk.Now()), 0.001, "nothing cleaned yet")

	st, err := s.Clean()
	require.NoError(t, err)
	assert.Equal(t, 4, st.Segments, "five sealed batches, the last of which holds the key's latest")
	assert.Len(t, readAll(t, plain.Partitions[0]), 3, "a topic that does not compact is left alone")
	assert.Zero(t, p.DirtyRatio(clk.Now()), "all clean")

	appendAll(t, p, keyed(now, "j", "1")) // one more sealed batch: dirty, 1 of 2 batches
	ratio := p.DirtyRatio(clk.Now())
	assert.InDelta(t, 0.5, ratio, 0.01)
	cfg.DirtyRatio = 0.75
	_, err = s.AlterTopicConfig(tp.ID, cfg)
	require.NoError(t, err)
	st, err = s.Clean()
	require.NoError(t, err)
	assert.Zero(t, st.Segments, "below min.cleanable.dirty.ratio: not cleaned")

	cfg.MaxCompactionLag = time.Minute
	_, err = s.AlterTopicConfig(tp.ID, cfg)
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	st, err = s.Clean()
	require.NoError(t, err)
	assert.Equal(t, 1, st.Segments, "past max.compaction.lag.ms: cleaned whatever its ratio")
}

func TestFollowerTakesACleanedLeadersGaps(t *testing.T) {
	leader, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	appendAll(t, leader, keyed(now, "a", "1"), keyed(now, "b", "1"), keyed(now, "a", "2"), keyed(now, "z", "1"))
	_, err := leader.Clean(clk.Now())
	require.NoError(t, err)
	res, err := leader.Read(0, ReadReplica, 1<<20, true)
	require.NoError(t, err)

	follower, _ := newTestPartition(t, compacted)
	_, err = follower.AppendReplica(res.Records)
	require.NoError(t, err, "a gap between the leader's batches is no mismatch")
	follower.SetHighWatermark(4)
	assert.Equal(t, readAll(t, leader), readAll(t, follower))
	o, err := follower.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(4), o.LogEnd)
}

// TestCleanerRunsOnItsTimer: the store's cleaner cleans a compacted
// topic by itself every cleaner interval, on the library's timer, in a
// synctest bubble so that no time is waited for.
func TestCleanerRunsOnItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithRetentionCheckInterval(0), WithCleanerInterval(15*time.Second))
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		tp, err := s.CreateTopic("c", 1, compacted)
		require.NoError(t, err)
		p, now := tp.Partitions[0], time.Now().UnixMilli()
		appendAll(t, p, keyed(now, "a", "1"), keyed(now, "a", "2"), keyed(now, "z", "1"))

		time.Sleep(14 * time.Second)
		synctest.Wait()
		assert.Len(t, readAll(t, p), 3, "not yet")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []kv{{1, "a", "2"}, {2, "z", "1"}}, readAll(t, p), "cleaned by the store's own pass")
	})
}

func TestCleanupPolicyConfig(t *testing.T) {
	c := DefaultTopicConfig()
	for _, tc := range []struct {
		name, value string
		want        CleanupPolicy
	}{
		{"compact", "compact", CleanupCompact},
		{"both", "compact,delete", CleanupCompactDelete},
		{"both, other order with spaces", "delete, compact", CleanupCompactDelete},
		{"delete", "delete", CleanupDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.With(ConfigCleanupPolicy, &tc.value)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Cleanup)
		})
	}
	for _, bad := range [][2]string{{ConfigCleanupPolicy, "shrink"}, {ConfigDirtyRatio, "1.5"}, {ConfigMaxCompactionLag, "0"},
		{ConfigDeleteRetentionMs, "-1"}, {ConfigSegmentBytes, "3"}} {
		_, err := c.With(bad[0], &bad[1])
		assert.ErrorIs(t, err, ErrInvalidConfig, "%s=%s", bad[0], bad[1])
	}
	values := map[string]string{}
	for _, v := range c.Values() {
		values[v.Name] = v.Value
	}
	assert.Equal(t, map[string]string{
		"cleanup.policy": "delete", "delete.retention.ms": "86400000", "max.compaction.lag.ms": "9223372036854775807",
		"leader.replication.throttled.replicas": "", "follower.replication.throttled.replicas": "",
		"max.message.bytes": "1048588", "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0",
		"min.insync.replicas": "1", "retention.bytes": "-1", "retention.ms": "604800000",
		"segment.bytes": "1073741824", "segment.ms": "604800000", "unclean.leader.election.enable": "false",
	}, values, "Kafka's defaults")
	var zero TopicConfig
	for _, v := range c.Values() {
		var err error
		zero, err = zero.With(v.Name, &v.Value)
		require.NoError(t, err)
	}
	assert.Equal(t, c, zero, "Values and With round-trip, as the catalog relies on")
}

// TestCleanStopsWhenTheStoreCloses: a pass given a closed stop swaps
// nothing more in, without error, so that Close does not wait for a
// whole pass over a large log.
func TestCleanStopsWhenTheStoreCloses(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	appendAll(t, p, keyed(now, "a", "1"), keyed(now, "a", "2"), keyed(now, "z", "1"))
	stop := make(chan struct{})
	close(stop)
	st, err := p.cleanUntil(clk.Now(), stop)
	require.NoError(t, err)
	assert.Zero(t, st.Segments)
	assert.Len(t, readAll(t, p), 3, "nothing cleaned")
	ratio := p.DirtyRatio(clk.Now())
	assert.InDelta(t, 1.0, ratio, 0.001, "still dirty: the next start cleans it")
}

// markers returns the offsets of p's transaction markers.
func markers(t *testing.T, p *Partition) []int64 {
	t.Helper()
	var out []int64
	require.NoError(t, p.log.Scan(0, func(b BatchInfo) bool {
		if b.marker() {
			out = append(out, b.BaseOffset)
		}
		return true
	}))
	return out
}

// TestCleanRemovesMarkersLast: a transaction's marker stays while a batch
// of the transaction does (here the producer's last batch, kept empty for
// its sequence, keeps its marker), then for delete.retention.ms, then
// goes, as Kafka's cleaner removes it; the partition's last stable offset
// is never held back by what stays.
func TestCleanRemovesMarkersLast(t *testing.T) {
	p, clk := newTestPartition(t, compacted)
	now := clk.Now().UnixMilli()
	txn := func(seq int32, kvs ...string) []byte { return txnKeyed(now, seq, kvs...) }
	appendAll(t, p, txn(0, "a", "1")) // 0, aborted
	_, err := p.AppendMarker(Marker{ProducerID: 7, ProducerEpoch: 0, Commit: false})
	require.NoError(t, err)           // 1
	appendAll(t, p, txn(1, "b", "1")) // 2, committed, then written over; the producer's last batch
	_, err = p.AppendMarker(Marker{ProducerID: 7, ProducerEpoch: 0, Commit: true})
	require.NoError(t, err)                                                           // 3
	appendAll(t, p, keyed(now, "b", "2"), keyed(now, "y", "1"), keyed(now, "z", "1")) // 4, 5, 6 (active)
	pass := func(next string) {
		t.Helper()
		_, err := p.Clean(clk.Now())
		require.NoError(t, err)
		o, err := p.Offsets()
		require.NoError(t, err)
		assert.Equal(t, o.HighWatermark, o.LastStable, "nothing holds the last stable offset back")
		appendAll(t, p, keyed(now, next, "1")) // a dirty segment for the next pass
	}

	pass("x")
	assert.Equal(t, []kv{{4, "b", "2"}, {5, "y", "1"}, {6, "z", "1"}, {7, "x", "1"}}, readAll(t, p),
		"both transactions' records went")
	assert.Equal(t, []int64{1, 3}, markers(t, p), "their markers stay: this pass met their batches")

	pass("w")
	assert.Equal(t, []int64{1, 3}, markers(t, p), "the aborted one's delete horizon is set")
	clk.Advance(2 * time.Hour)
	pass("v")
	assert.Equal(t, []int64{3}, markers(t, p),
		"past the horizon it goes; the committed one stays with its producer's last batch")
}
