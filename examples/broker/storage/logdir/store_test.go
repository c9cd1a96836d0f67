package logdir_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// openStore opens the log dir at path and a store on it, as the broker
// does; close closes both, in the broker's order.
func openStore(t *testing.T, path string, opts ...logdir.Option) (s *storage.Store, close func()) {
	t.Helper()
	return openStoreWith(t, path, opts)
}

// openStoreWith is openStore with the store's options too.
func openStoreWith(t *testing.T, path string, opts []logdir.Option, storeOpts ...storage.Option) (s *storage.Store, close func()) {
	t.Helper()
	d, err := logdir.Open(path, opts...)
	require.NoError(t, err)
	s, err = storage.New(append([]storage.Option{storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d),
		storage.WithRetentionCheckInterval(0)}, storeOpts...)...)
	if err != nil {
		require.NoError(t, d.Close())
		require.NoError(t, err)
	}
	closed := false
	close = func() {
		if !closed {
			closed = true
			require.NoError(t, s.Close())
			require.NoError(t, d.Close())
		}
	}
	t.Cleanup(close)
	return s, close
}

func values(t *testing.T, p *storage.Partition) []string {
	t.Helper()
	r, err := p.Read(0, storage.ReadUncommitted, 1<<30, true)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	var out []string
	for _, rec := range recs {
		out = append(out, string(rec.Value))
	}
	return out
}

// TestStoreSurvivesRestart: topics (names, ids, partitions, configs) and
// their batches come back, a deleted topic does not, and an idempotent
// producer's retry of a batch acknowledged before the restart is
// recognised after it.
func TestStoreSurvivesRestart(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path, logdir.WithSegmentBytes(300))
	cfg := storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 4000, MinInsyncReplicas: 1}
	orders, err := s.CreateTopic("orders", 3, cfg)
	require.NoError(t, err)
	_, err = s.CreateTopic("gone", 1, s.TopicDefaults())
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	var want []string
	for seq := int32(0); seq < 20; seq += 2 {
		a, b := string(rune('a'+seq)), string(rune('a'+seq+1))
		_, err := orders.Partitions[1].Append(batchtest.Idempotent(42, 3, seq, now, a, b))
		require.NoError(t, err)
		want = append(want, a, b)
	}
	last := batchtest.Idempotent(42, 3, 20, now, "last")
	res, err := orders.Partitions[1].Append(last)
	require.NoError(t, err)
	want = append(want, "last")
	_, err = s.DeleteTopic("gone")
	require.NoError(t, err)
	closeFirst()
	assert.NoDirExists(t, filepath.Join(path, "gone-0"))

	s, _ = openStore(t, path, logdir.WithSegmentBytes(300))
	var names []string
	for _, topic := range s.Topics() {
		names = append(names, topic.Name)
	}
	assert.Equal(t, []string{"orders"}, names)
	again, err := s.Topic("orders")
	require.NoError(t, err)
	assert.Equal(t, orders.ID, again.ID)
	assert.Equal(t, cfg, again.Config())
	require.Len(t, again.Partitions, 3)
	p := again.Partitions[1]
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, storage.Offsets{LogStart: 0, HighWatermark: 21, LastStable: 21, LogEnd: 21}, o,
		"the high watermark is the recovered log end")
	assert.Equal(t, want, values(t, p), "every batch, in order")
	assert.Empty(t, values(t, again.Partitions[0]))

	dup, err := p.Append(last)
	require.NoError(t, err)
	assert.True(t, dup.Duplicate, "the retry is recognised after the restart")
	assert.Equal(t, res.BaseOffset, dup.BaseOffset, "and answered with its first offset")
	_, err = p.Append(batchtest.Idempotent(42, 2, 21, now, "stale"))
	assert.ErrorIs(t, err, storage.ErrInvalidProducerEpoch, "the producer's epoch is remembered")
	next, err := p.Append(batchtest.Idempotent(42, 3, 21, now, "next"))
	require.NoError(t, err)
	assert.Equal(t, int64(21), next.BaseOffset)
}

// TestRetentionDeletesSegmentFiles applies retention.bytes through the
// store: whole segment files go, and the log start is the first kept
// segment's base, before and after a restart.
func TestRetentionDeletesSegmentFiles(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path, logdir.WithSegmentBytes(300))
	size := int64(len(batchtest.Values(1, "x")))
	topic, err := s.CreateTopic("t", 1, storage.TopicConfig{Retention: -1, RetentionBytes: 8 * size, MaxMessageBytes: 4000})
	require.NoError(t, err)
	p := topic.Partitions[0]
	for range 20 {
		_, err := p.Append(batchtest.Values(time.Now().UnixMilli(), "x"))
		require.NoError(t, err)
	}
	perSegment := 300 / size
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Zero(t, o.LogStart%perSegment, "the log start is a segment's base")
	assert.Positive(t, o.LogStart)
	entries, err := os.ReadDir(filepath.Join(path, "t-0"))
	require.NoError(t, err)
	logs := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".log" {
			logs++
		}
	}
	assert.Equal(t, int((20-o.LogStart+perSegment-1)/perSegment), logs, "the segments before the log start are deleted")
	assert.GreaterOrEqual(t, (20-o.LogStart)*size, 8*size, "retention.bytes is kept")
	closeFirst()

	s, _ = openStore(t, path, logdir.WithSegmentBytes(300))
	p, err = s.Partition("t", 0)
	require.NoError(t, err)
	after, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, o, after, "the log start survives without a checkpoint")
}

func TestCatalogFile(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path)
	topic, err := s.CreateTopic("a.b-c_d", 2, storage.TopicConfig{Retention: time.Minute, RetentionBytes: 10, MaxMessageBytes: 100})
	require.NoError(t, err)
	closeFirst()
	data, err := os.ReadFile(filepath.Join(path, "topics.json"))
	require.NoError(t, err)
	var f map[string]any
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, map[string]any{"version": 1.0, "topics": []any{map[string]any{
		"name": "a.b-c_d", "id": topic.ID.String(), "partitions": 2.0, "replication_factor": 1.0,
		"configs": map[string]any{"retention.ms": "60000", "retention.bytes": "10", "max.message.bytes": "100",
			"min.insync.replicas": "1", "unclean.leader.election.enable": "false",
			"cleanup.policy": "delete", "delete.retention.ms": "0", "max.compaction.lag.ms": "9223372036854775807",
			"min.cleanable.dirty.ratio": "0", "min.compaction.lag.ms": "0", "segment.bytes": "0", "segment.ms": "0",
			"leader.replication.throttled.replicas": "", "follower.replication.throttled.replicas": ""},
	}}}, f)
}

// TestCatalogKeepsReplication: a topic's replication factor,
// min.insync.replicas and throttled replicas survive a restart, and a
// catalog written before they existed reads as 1 for both and no
// throttled replicas.
func TestCatalogKeepsReplication(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path)
	cfg := storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 4000, MinInsyncReplicas: 2,
		LeaderThrottled: "0:1,1:2", FollowerThrottled: storage.AllThrottled}
	id := storage.TopicID{4, 2}
	_, err := s.CreateTopicSpec(storage.TopicSpec{Name: "replicated", ID: id, Partitions: 2, Config: cfg, ReplicationFactor: 3})
	require.NoError(t, err)
	closeFirst()

	s, closeSecond := openStore(t, path)
	topic, err := s.Topic("replicated")
	require.NoError(t, err)
	assert.Equal(t, id, topic.ID)
	assert.Equal(t, int16(3), topic.ReplicationFactor)
	assert.Equal(t, cfg, topic.Config())
	closeSecond()

	old := `{"version": 1, "topics": [{"name": "old", "id": "` + id.String() + `", "partitions": 1,
	  "configs": {"max.message.bytes": "4000", "retention.bytes": "-1", "retention.ms": "-1"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(path, "topics.json"), []byte(old), 0o644))
	s, _ = openStore(t, path)
	topic, err = s.Topic("old")
	require.NoError(t, err)
	assert.Equal(t, int16(1), topic.ReplicationFactor, "no replication_factor: 1")
	cfg.MinInsyncReplicas = 1
	cfg.LeaderThrottled, cfg.FollowerThrottled = "", "" // no throttled replicas: none
	want := cfg
	want.DirtyRatio, want.DeleteRetention = 0.5, 24*time.Hour
	want.SegmentBytes, want.SegmentMs = 1<<30, 7*24*time.Hour
	assert.Equal(t, want, topic.Config(), "no min.insync.replicas: 1; no compaction configs: Kafka's defaults")
}

// TestStrayPartitionDirectories: a directory the catalog does not account
// for is what a crash left of a deletion, and goes; without any catalog,
// the broker refuses to guess.
func TestStrayPartitionDirectories(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path)
	_, err := s.CreateTopic("kept", 1, s.TopicDefaults())
	require.NoError(t, err)
	closeFirst()
	for _, dir := range []string{"ghost-0", "kept-1"} {
		require.NoError(t, os.MkdirAll(filepath.Join(path, dir), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(path, dir, "00000000000000000000.log"), nil, 0o644))
	}
	_, closeSecond := openStore(t, path)
	closeSecond()
	assert.NoDirExists(t, filepath.Join(path, "ghost-0"), "no topic ghost")
	assert.NoDirExists(t, filepath.Join(path, "kept-1"), "kept has one partition")
	assert.DirExists(t, filepath.Join(path, "kept-0"))

	require.NoError(t, os.Remove(filepath.Join(path, "topics.json")))
	d, err := logdir.Open(path)
	require.NoError(t, err)
	defer d.Close()
	_, err = storage.New(storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d), storage.WithRetentionCheckInterval(0))
	assert.ErrorIs(t, err, logdir.ErrInconsistent, "partition directories but no catalog")
	assert.DirExists(t, filepath.Join(path, "kept-0"), "kept for the operator")
}

func TestReserveProducerIDs(t *testing.T) {
	path := t.TempDir()
	d, err := logdir.Open(path)
	require.NoError(t, err)
	first, err := d.ReserveProducerIDs(1000)
	require.NoError(t, err)
	assert.Equal(t, int64(0), first)
	second, err := d.ReserveProducerIDs(1000)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), second)
	require.NoError(t, d.Close())

	d, err = logdir.Open(path)
	require.NoError(t, err)
	defer d.Close()
	third, err := d.ReserveProducerIDs(10)
	require.NoError(t, err)
	assert.Equal(t, int64(2000), third, "never an id reserved before the restart")
	_, err = d.ReserveProducerIDs(0)
	assert.ErrorIs(t, err, logdir.ErrInvalidOption)
}

// TestFollowerOnSegmentFiles replicates a leader's batches into a follower
// whose log is in segment files, truncates it across segments and resets
// it, each time through a restart: the follower reopens holding exactly
// the leader's batches it kept, byte for byte.
func TestFollowerOnSegmentFiles(t *testing.T) {
	leaderStore, err := storage.New(storage.WithRetentionCheckInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, leaderStore.Close()) })
	forever := storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 4000}
	lt, err := leaderStore.CreateTopic("t", 1, forever)
	require.NoError(t, err)
	leader := lt.Partitions[0]
	now := time.Now().UnixMilli()
	for seq := int32(0); seq < 30; seq += 2 {
		_, err := leader.Append(batchtest.Idempotent(5, 0, seq, now, "a", "b"))
		require.NoError(t, err)
	}
	read := func(p *storage.Partition, from int64) []byte {
		t.Helper()
		r, err := p.Read(from, storage.ReadReplica, 1<<30, true)
		require.NoError(t, err)
		return r.Records
	}
	all := read(leader, 0)

	path := t.TempDir()
	follower := func(s *storage.Store) *storage.Partition {
		t.Helper()
		p, err := s.Partition("t", 0)
		require.NoError(t, err)
		return p
	}
	s, closeFirst := openStore(t, path, logdir.WithSegmentBytes(300))
	_, err = s.CreateTopicSpec(storage.TopicSpec{Name: "t", ID: lt.ID, Partitions: 1, Config: forever, ReplicationFactor: 2})
	require.NoError(t, err)
	res, err := follower(s).AppendReplica(all)
	require.NoError(t, err)
	assert.Equal(t, int64(29), res.LastOffset)
	closeFirst()

	s, closeSecond := openStore(t, path, logdir.WithSegmentBytes(300))
	p := follower(s)
	assert.Equal(t, all, read(p, 0), "the leader's batches, byte for byte, after a restart")
	require.NoError(t, p.TruncateTo(9), "inside the batch at 8-9, several segments back")
	closeSecond()

	s, closeThird := openStore(t, path, logdir.WithSegmentBytes(300))
	p = follower(s)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(8), o.LogEnd)
	assert.Equal(t, all[:len(all)-len(read(leader, 8))], read(p, 0), "the batches before 8")
	_, err = p.Append(batchtest.Idempotent(5, 0, 10, now, "x", "y"))
	assert.ErrorIs(t, err, storage.ErrOutOfOrderSequence, "the producer's state is what the log holds")
	_, err = p.AppendReplica(read(leader, 8))
	require.NoError(t, err, "the follower fetches again from its log end")
	assert.Equal(t, all, read(p, 0))

	require.NoError(t, p.TruncateFullyAndStartAt(100))
	closeThird()
	s, _ = openStore(t, path, logdir.WithSegmentBytes(300))
	o, err = follower(s).Offsets()
	require.NoError(t, err)
	assert.Equal(t, storage.Offsets{LogStart: 100, HighWatermark: 100, LastStable: 100, LogEnd: 100}, o,
		"reset, and so after a restart")
}

// TestTransactionsSurviveRestart: the open transactions, the last stable
// offset, the aborted index and the producers' coordinator epochs come
// back from the segment files, the markers' types read from their records
// (a batch header does not say them).
func TestTransactionsSurviveRestart(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path, logdir.WithSegmentBytes(200))
	cfg := storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 4000}
	topic, err := s.CreateTopic("t", 1, cfg)
	require.NoError(t, err)
	p := topic.Partitions[0]
	now := time.Now().UnixMilli()
	appendAll := func(raws ...[]byte) {
		t.Helper()
		for _, raw := range raws {
			_, err := p.Append(raw)
			require.NoError(t, err)
		}
	}
	appendAll(batchtest.Values(now, "a"), // 0
		batchtest.Transactional(1, 0, 0, now, "t1", "t2"), // 1-2
		batchtest.Transactional(2, 0, 0, now, "u1"))       // 3
	_, err = p.AppendMarker(storage.Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 4}) // 4: abort
	require.NoError(t, err)
	appendAll(batchtest.Transactional(3, 0, 0, now, "v1"))                                                      // 5
	_, err = p.AppendMarker(storage.Marker{ProducerID: 3, ProducerEpoch: 0, CoordinatorEpoch: 4, Commit: true}) // 6
	require.NoError(t, err)
	appendAll(batchtest.Values(now, "b")) // 7
	want, err := p.Offsets()
	require.NoError(t, err)
	require.Equal(t, int64(3), want.LastStable, "producer 2's transaction is open")
	wantRead, err := p.Read(0, storage.ReadCommitted, 1<<20, true)
	require.NoError(t, err)
	require.Len(t, wantRead.Aborted, 1)
	wantProducers := p.Producers()
	closeFirst()

	s, _ = openStore(t, path, logdir.WithSegmentBytes(200))
	p, err = s.Partition("t", 0)
	require.NoError(t, err)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, want, o, "the open transaction bounds the last stable offset again")
	r, err := p.Read(0, storage.ReadCommitted, 1<<20, true)
	require.NoError(t, err)
	assert.Equal(t, wantRead.Aborted, r.Aborted, "the aborted index is rebuilt from the markers")
	assert.Equal(t, wantProducers, p.Producers(), "and the producers, coordinator epochs included")
	first, _, ok := p.OngoingTxn(2)
	assert.True(t, ok)
	assert.Equal(t, int64(3), first)
	_, err = p.AppendMarker(storage.Marker{ProducerID: 3, ProducerEpoch: 0, CoordinatorEpoch: 3, Commit: true})
	assert.ErrorIs(t, err, storage.ErrCoordinatorFenced)
}
