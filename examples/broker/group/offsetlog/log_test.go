package offsetlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/internal/batchfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	t0     = time.UnixMilli(1_700_000_000_123)
	noSync = withSync(func(*os.File) error { return nil })
)

func tp(topic string, p int32) group.TopicPartition {
	return group.TopicPartition{Topic: topic, Partition: p}
}

func off(topic string, p int32, o int64) group.StoredOffset {
	return group.StoredOffset{TopicPartition: tp(topic, p), Offset: o, LeaderEpoch: 3, Metadata: "m", Committed: t0}
}

// openTest opens the log in dir, closed at the end of the test.
func openTest(t *testing.T, dir string, opts ...Option) *Log {
	t.Helper()
	l, err := Open(dir, append([]Option{noSync}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func load(t *testing.T, l *Log) []group.StoredGroup {
	t.Helper()
	gs, err := l.Load()
	require.NoError(t, err)
	return gs
}

func TestChangesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	explicit := off("t", 2, 7)
	explicit.LeaderEpoch, explicit.ExpireAt = -1, t0.Add(time.Hour)
	require.NoError(t, l.Commit("g", "consumer", []group.StoredOffset{off("t", 0, 10), off("t", 1, 20), explicit}))
	require.NoError(t, l.Commit("g", "consumer", []group.StoredOffset{off("t", 0, 11)}))
	require.NoError(t, l.Commit("simple", "", []group.StoredOffset{off("u", 0, 1)}))
	require.NoError(t, l.Commit("gone", "consumer", []group.StoredOffset{off("u", 0, 1)}))
	require.NoError(t, l.Delete("g", []group.TopicPartition{tp("t", 1), tp("t", 9), tp("t", 1)}))
	require.NoError(t, l.DeleteGroup("gone"))
	require.NoError(t, l.DeleteGroup("never"), "a group it does not hold: nothing to do")
	want := []group.StoredGroup{
		{Group: "g", ProtocolType: "consumer", Offsets: []group.StoredOffset{off("t", 0, 11), explicit}},
		{Group: "simple", Offsets: []group.StoredOffset{off("u", 0, 1)}},
	}
	assert.Equal(t, want, load(t, l))
	require.NoError(t, l.Close())
	assert.ErrorIs(t, l.Commit("g", "", nil), ErrClosed)

	again := openTest(t, dir)
	assert.Equal(t, want, load(t, again), "replayed as they were")
}

// TestRecordsAreKafkas reads the file back with kmsg: __consumer_offsets'
// keys and values, tombstones as null values.
func TestRecordsAreKafkas(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	explicit := off("t", 1, 5)
	explicit.ExpireAt = t0.Add(time.Minute)
	require.NoError(t, l.Commit("g", "consumer", []group.StoredOffset{off("t", 0, 10), explicit}))
	require.NoError(t, l.DeleteGroup("g"))

	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	var recs []kmsg.Record
	_, err = batchfile.Scan(bytes.NewReader(data), int64(len(data)), 0, 0, func(b batchfile.Batch) error {
		rs, err := decodeRecords(b.Raw)
		for _, r := range rs {
			// The records alias Raw, which the next batch reuses.
			r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			recs = append(recs, r)
		}
		return err
	})
	require.NoError(t, err)
	require.Len(t, recs, 6)

	var gk kmsg.GroupMetadataKey
	require.NoError(t, gk.ReadFrom(recs[0].Key))
	var gv kmsg.GroupMetadataValue
	require.NoError(t, gv.ReadFrom(recs[0].Value))
	assert.Equal(t, "g", gk.Group)
	assert.Equal(t, "consumer", gv.ProtocolType)

	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(recs[1].Key))
	assert.Equal(t, kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 0}, k)
	var v kmsg.OffsetCommitValue
	require.NoError(t, v.ReadFrom(recs[1].Value))
	assert.Equal(t, kmsg.OffsetCommitValue{Version: 3, Offset: 10, LeaderEpoch: 3, Metadata: "m", CommitTimestamp: t0.UnixMilli()}, v)
	require.NoError(t, v.ReadFrom(recs[2].Value))
	assert.Equal(t, int16(1), v.Version, "an explicit expiry: version 1, as Kafka writes it")
	assert.Equal(t, t0.Add(time.Minute).UnixMilli(), v.ExpireTimestamp)
	for _, r := range recs[3:] {
		assert.Nil(t, r.Value, "tombstones")
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	core, logs := observer.New(zap.InfoLevel)
	l := openTest(t, dir, WithCompactAfter(20), WithLogger(zap.New(core)))
	for i := range 40 {
		require.NoError(t, l.Commit("g", "consumer", []group.StoredOffset{off("t", 0, int64(i)), off("t", 1, int64(i))}))
	}
	require.NoError(t, l.Commit("h", "", []group.StoredOffset{off("t", 0, 1)}))
	require.NoError(t, l.DeleteGroup("h"))
	require.Positive(t, logs.FilterMessage("compacted the offsets log").Len())
	st, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(40*2*60), "far smaller than every commit")
	assert.LessOrEqual(t, l.next, int64(3+20+20), "the live records, and fewer dead than the threshold and the live")

	want := []group.StoredGroup{{Group: "g", ProtocolType: "consumer", Offsets: []group.StoredOffset{off("t", 0, 39), off("t", 1, 39)}}}
	assert.Equal(t, want, load(t, l))
	require.NoError(t, l.Close())
	assert.Equal(t, want, load(t, openTest(t, dir)), "the compacted file replays to the same state")
	assert.NoFileExists(t, filepath.Join(dir, FileName+".tmp"))
}

// A compaction's batches hold at most batchRecords records, also when a
// group's metadata record is the one that fills a batch.
func TestCompactionBatchesAreBounded(t *testing.T) {
	l := openTest(t, t.TempDir())
	offs := func(n int) []group.StoredOffset {
		out := make([]group.StoredOffset, n)
		for i := range out {
			out[i] = off("t", int32(i), 1)
		}
		return out
	}
	// a's record and 998 offsets, then b's record: the 1000th.
	require.NoError(t, l.Commit("a", "consumer", offs(batchRecords-2)))
	require.NoError(t, l.Commit("b", "consumer", offs(batchRecords+5)))
	l.mu.Lock()
	data := l.liveBatches()
	l.mu.Unlock()
	total := 0
	_, err := batchfile.Scan(bytes.NewReader(data), int64(len(data)), 0, 0, func(b batchfile.Batch) error {
		n := int(b.Info.NumRecords())
		assert.LessOrEqual(t, n, batchRecords, "batch at %d", b.Pos)
		total += n
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2+batchRecords-2+batchRecords+5, total)
}

// TestTornTail cuts the file at every length inside its last batch: the
// log reopens without the last change, and takes changes again.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 1)}))
	st, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	whole := st.Size()
	require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 2)}))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)

	for n := whole; n < int64(len(data)); n++ {
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), data[:n], 0o644))
		l, err := Open(dir, noSync)
		require.NoError(t, err, "cut at %d", n)
		assert.Equal(t, []group.StoredGroup{{Group: "g", Offsets: []group.StoredOffset{off("t", 0, 1)}}}, load(t, l), "cut at %d", n)
		require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 3)}))
		require.NoError(t, l.Close())
		again, err := Open(dir, noSync)
		require.NoError(t, err)
		assert.Equal(t, int64(3), load(t, again)[0].Offsets[0].Offset, "cut at %d: the next change lands after the cut", n)
		require.NoError(t, again.Close())
	}

	// A flipped bit in the first batch, a whole one after it: corruption.
	data[whole/2] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), data, 0o644))
	_, err = Open(dir, noSync)
	assert.ErrorIs(t, err, storage.ErrCorruptBatch)
	assert.ErrorContains(t, err, "position 0")
}

// TestTornTailAfterCleanShutdown: a log shut down cleanly has no torn
// tail: a bad last batch fails Open, and nothing is cut.
func TestTornTailAfterCleanShutdown(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 1)}))
	require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 2)}))
	require.NoError(t, l.Close())
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o644))

	_, err = Open(dir, noSync, WithCleanShutdown(true))
	assert.ErrorIs(t, err, storage.ErrCorruptBatch)
	assert.ErrorContains(t, err, "shut down cleanly")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), st.Size(), "nothing cut")
}

// syncCount counts fsyncs of the log's file, and fails them when told.
type syncCount struct {
	mu   sync.Mutex
	n    int
	fail error
}

func (s *syncCount) sync(f *os.File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if filepath.Base(f.Name()) == FileName {
		s.n++
	}
	return nil
}

func (s *syncCount) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func TestFlushEveryChange(t *testing.T) {
	sc := &syncCount{}
	l := openTest(t, t.TempDir(), withSync(sc.sync), WithFlush(1, 0))
	base := sc.count()
	require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 1)}))
	require.NoError(t, l.Delete("g", []group.TopicPartition{tp("t", 0)}))
	assert.Equal(t, base+2, sc.count(), "each change fsynced before the coordinator answers")

	sc.mu.Lock()
	sc.fail = errors.New("EIO")
	sc.mu.Unlock()
	err := l.Commit("g", "", []group.StoredOffset{off("t", 0, 2)})
	assert.ErrorContains(t, err, "EIO")
	sc.mu.Lock()
	sc.fail = nil
	sc.mu.Unlock()
	assert.ErrorContains(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 3)}), "EIO", "sticky")
}

func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &syncCount{}
		l, err := Open(t.TempDir(), withSync(sc.sync), WithFlush(1<<62, time.Second))
		require.NoError(t, err)
		base := sc.count()
		require.NoError(t, l.Commit("g", "", []group.StoredOffset{off("t", 0, 1)}))
		synctest.Wait()
		assert.Equal(t, base, sc.count())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, base+1, sc.count(), "fsynced at the next tick")
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, base+1, sc.count(), "nothing new, nothing fsynced")
		require.NoError(t, l.Close())
	})
}
