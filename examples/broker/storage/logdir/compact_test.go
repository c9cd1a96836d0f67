package logdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// openCompacting opens the log dir at path, with segments of segBytes,
// and a store on it whose cleaner runs only when the test calls Clean.
func openCompacting(t *testing.T, path string, segBytes int64) (*storage.Store, func()) {
	t.Helper()
	return openStoreWith(t, path, []logdir.Option{logdir.WithSegmentBytes(segBytes)}, storage.WithCleanerInterval(0))
}

// keyedBatch returns a batch of one record, key k and value v, at now.
func keyedBatch(k, v string) []byte {
	b := batchtest.Header(1, time.Now().UnixMilli())
	b.Records = batchtest.Records(kmsg.Record{Key: []byte(k), Value: []byte(v)})
	return batchtest.Encode(b)
}

// record is a record read back: offset, key and value.
type record struct {
	Offset     int64
	Key, Value string
}

// readRecords returns every record of p, as a consumer from the log
// start reads them.
func readRecords(t *testing.T, p *storage.Partition) []record {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	r, err := p.Read(o.LogStart, storage.ReadUncommitted, 1<<30, true)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	var out []record
	for _, rec := range recs {
		out = append(out, record{rec.Offset, string(rec.Key), string(rec.Value)})
	}
	return out
}

// compactedTopic creates topic "c", compacted, on s, and appends to it
// keys a, b, c written over three times each and a last key, z, in its
// active segment.
func compactedTopic(t *testing.T, s *storage.Store) *storage.Partition {
	t.Helper()
	cfg := s.TopicDefaults()
	cfg.Cleanup, cfg.DirtyRatio = storage.CleanupCompact, 0
	tp, err := s.CreateTopic("c", 1, cfg)
	require.NoError(t, err)
	p := tp.Partitions[0]
	for i := range 3 {
		for _, k := range []string{"a", "b", "c"} {
			_, err := p.Append(keyedBatch(k, k+string(rune('0'+i))))
			require.NoError(t, err)
		}
	}
	_, err = p.Append(keyedBatch("z", "z0"))
	require.NoError(t, err)
	return p
}

// cleanedRecords is what compactedTopic's partition holds once cleaned,
// in segments of two batches: c's latest value is in the active segment,
// which the cleaner neither cleans nor maps, so c1 stays.
var cleanedRecords = []record{{5, "c", "c1"}, {6, "a", "a2"}, {7, "b", "b2"}, {8, "c", "c2"}, {9, "z", "z0"}}

// TestCleanOnSegmentFiles: the cleaner rewrites sealed segment files,
// keeps offsets (a segment emptied of its records keeps its last batch,
// empty, so that the segments still follow each other), and what it
// wrote is what a restart reads back.
func TestCleanOnSegmentFiles(t *testing.T) {
	path := t.TempDir()
	size := int64(len(keyedBatch("a", "a0")))
	s, closeFirst := openCompacting(t, path, 2*size) // two batches a segment
	p := compactedTopic(t, s)
	before, err := p.Offsets()
	require.NoError(t, err)
	sizeBefore, err := p.Size()
	require.NoError(t, err)

	st, err := s.Clean()
	require.NoError(t, err)
	assert.Equal(t, 3, st.Segments, "the sealed segments holding an overwritten value")
	assert.Equal(t, cleanedRecords, readRecords(t, p))
	after, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, before, after, "offsets preserved")
	sizeAfter, err := p.Size()
	require.NoError(t, err)
	assert.Less(t, sizeAfter, sizeBefore)
	closeFirst()

	s, _ = openCompacting(t, path, 2*size)
	p, err = s.Partition("c", 0)
	require.NoError(t, err)
	assert.Equal(t, cleanedRecords, readRecords(t, p), "the same after a restart")
	reopened, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, before, reopened)
	st, err = s.Clean()
	require.NoError(t, err)
	assert.Zero(t, st.BytesRead, "the cleaner's checkpoint says it is all clean: nothing is read again")
	assert.Zero(t, st.RecordsRemoved, "cleaning again after the restart removes nothing more")
	assert.Equal(t, cleanedRecords, readRecords(t, p))
	_, err = p.Append(keyedBatch("a", "a3"))
	require.NoError(t, err, "appends go on at the log end")
}

// TestCleanCrashLeavesOldOrNewSegment: a crash before the renames leaves
// temporary files, which the next open deletes; one between them leaves
// the new index beside the old .log, which the next open rebuilds. Either
// way the records are the old segment's, and cleaning again gives the
// same result.
func TestCleanCrashLeavesOldOrNewSegment(t *testing.T) {
	for _, crash := range []string{"before the renames", "between the renames"} {
		t.Run(crash, func(t *testing.T) {
			path := t.TempDir()
			size := int64(len(keyedBatch("a", "a0")))
			s, closeFirst := openCompacting(t, path, 2*size)
			p := compactedTopic(t, s)
			want := readRecords(t, p)
			closeFirst()

			// The first segment's files as they were, to put back
			// after a clean as the crash would have left them.
			dir := filepath.Join(path, "c-0")
			first := filepath.Join(dir, "00000000000000000000")
			oldLog, err := os.ReadFile(first + ".log")
			require.NoError(t, err)
			oldIdx, err := os.ReadFile(first + ".index")
			require.NoError(t, err)

			s, closeSecond := openCompacting(t, path, 2*size)
			_, err = s.Clean()
			require.NoError(t, err)
			closeSecond()
			newLog, err := os.ReadFile(first + ".log")
			require.NoError(t, err)
			require.NotEqual(t, oldLog, newLog, "the first segment was cleaned")

			// The crash came before the pass ended: its checkpoint,
			// written last, is not there either.
			require.NoError(t, os.Remove(filepath.Join(dir, "cleaner-offset-checkpoint")))
			require.NoError(t, os.WriteFile(first+".log", oldLog, 0o644))
			if crash == "before the renames" {
				require.NoError(t, os.WriteFile(first+".index", oldIdx, 0o644))
				require.NoError(t, os.WriteFile(first+".log.tmp", newLog, 0o644))
				require.NoError(t, os.WriteFile(first+".index.tmp", []byte{1, 2, 3}, 0o644))
			}
			// Later segments stay cleaned: each is swapped whole, so a
			// mix of old and new segments is what a crash leaves too.

			s, _ = openCompacting(t, path, 2*size)
			p, err = s.Partition("c", 0)
			require.NoError(t, err)
			got := readRecords(t, p)
			assert.Equal(t, []record{want[0], want[1]}, got[:2], "the first segment is the old one, whole")
			for _, name := range dirNames(t, dir) {
				assert.False(t, strings.HasSuffix(name, ".tmp"), "%s is left", name)
			}
			_, err = s.Clean()
			require.NoError(t, err)
			assert.Equal(t, cleanedRecords, readRecords(t, p), "cleaning again gives the same result")
		})
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestTopicSegmentBytesRollsSegments: a topic's own segment.bytes rolls
// its segments in a log dir whose segments are far larger, from the next
// append after it is set, so that its cleaner finds sealed segments; one
// equal to the store's default leaves the log dir's size.
func TestTopicSegmentBytesRollsSegments(t *testing.T) {
	path := t.TempDir()
	s, _ := openStoreWith(t, path, []logdir.Option{logdir.WithSegmentBytes(1 << 20)}, storage.WithCleanerInterval(0))
	size := int32(len(keyedBatch("a", "a0")))
	segments := func(topic string) int {
		n := 0
		for _, name := range dirNames(t, filepath.Join(path, topic+"-0")) {
			if strings.HasSuffix(name, ".log") {
				n++
			}
		}
		return n
	}
	cfg := s.TopicDefaults()
	own, err := s.CreateTopic("own", 1, cfg)
	require.NoError(t, err)
	plain, err := s.CreateTopic("plain", 1, cfg)
	require.NoError(t, err)
	cfg.SegmentBytes = 2 * size
	_, err = s.AlterTopicConfig(own.ID, cfg)
	require.NoError(t, err)
	for i := range 6 {
		for _, tp := range []*storage.Topic{own, plain} {
			_, err := tp.Partitions[0].Append(keyedBatch("k", string(rune('0'+i))))
			require.NoError(t, err)
		}
	}
	assert.Equal(t, 3, segments("own"), "two batches a segment")
	assert.Equal(t, 1, segments("plain"), "the log dir's megabyte")
}

// TestMaxCompactionLagRollsTheActiveSegment: a compacted topic's active
// segment rolls once older than max.compaction.lag.ms (KIP-354), so that
// its records become cleanable within it.
func TestMaxCompactionLagRollsTheActiveSegment(t *testing.T) {
	path := t.TempDir()
	clk := clocktest.New()
	s, _ := openStoreWith(t, path, []logdir.Option{logdir.WithClock(clk)}, storage.WithCleanerInterval(0), storage.WithClock(clk))
	cfg := s.TopicDefaults()
	cfg.Cleanup, cfg.MaxCompactionLag = storage.CleanupCompact, time.Minute
	tp, err := s.CreateTopic("lag", 1, cfg)
	require.NoError(t, err)
	p := tp.Partitions[0]
	_, err = p.Append(keyedBatch("a", "1"))
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = p.Append(keyedBatch("a", "2"))
	require.NoError(t, err)
	n := 0
	for _, name := range dirNames(t, filepath.Join(path, "lag-0")) {
		if strings.HasSuffix(name, ".log") {
			n++
		}
	}
	assert.Equal(t, 2, n, "rolled after max.compaction.lag.ms")
}

// TestCleanedTransactionsSurviveRestart: after the cleaner dropped an
// aborted transaction's records and compacted a committed one's, a restart
// rebuilds the producers' state and the transactions from what is left,
// and finds none open: the last stable offset is the high watermark.
func TestCleanedTransactionsSurviveRestart(t *testing.T) {
	path := t.TempDir()
	size := int64(len(keyedBatch("a", "a0")))
	s, closeFirst := openCompacting(t, path, 2*size)
	cfg := s.TopicDefaults()
	cfg.Cleanup, cfg.DirtyRatio = storage.CleanupCompact, 0
	tp, err := s.CreateTopic("c", 1, cfg)
	require.NoError(t, err)
	p := tp.Partitions[0]
	txn := func(seq int32, k, v string) []byte {
		b := batchtest.Header(1, time.Now().UnixMilli())
		b.Attributes = 0x10
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = 7, 0, seq
		b.Records = batchtest.Records(kmsg.Record{Key: []byte(k), Value: []byte(v)})
		return batchtest.Encode(b)
	}
	appendOrFail := func(raw []byte) {
		t.Helper()
		_, err := p.Append(raw)
		require.NoError(t, err)
	}
	appendOrFail(txn(0, "a", "aborted"))
	_, err = p.AppendMarker(storage.Marker{ProducerID: 7, ProducerEpoch: 0, Commit: false})
	require.NoError(t, err)
	appendOrFail(txn(1, "b", "committed"))
	_, err = p.AppendMarker(storage.Marker{ProducerID: 7, ProducerEpoch: 0, Commit: true})
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "y", "z"} {
		appendOrFail(keyedBatch(k, k+"1"))
	}
	_, err = s.Clean()
	require.NoError(t, err)
	// The markers stay (this pass met their transactions' batches), and
	// read as control records.
	data := func(recs []record) []record {
		var out []record
		for _, r := range recs {
			if !strings.HasPrefix(r.Key, "\x00\x00") {
				out = append(out, r)
			}
		}
		return out
	}
	want := []record{{4, "a", "a1"}, {5, "b", "b1"}, {6, "y", "y1"}, {7, "z", "z1"}}
	assert.Equal(t, want, data(readRecords(t, p)))
	before, err := p.Offsets()
	require.NoError(t, err)
	closeFirst()

	s, _ = openCompacting(t, path, 2*size)
	p, err = s.Partition("c", 0)
	require.NoError(t, err)
	assert.Equal(t, want, data(readRecords(t, p)))
	after, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.Equal(t, after.HighWatermark, after.LastStable, "no transaction is open after the restart")
	res, err := p.Append(txn(1, "b", "committed"))
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "the producer's last batch, kept empty, still recognises its retry")
}
