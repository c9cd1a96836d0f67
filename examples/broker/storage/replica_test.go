package storage

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
)

// leaderAndFollower returns partition 0 of topic t in two stores: a leader
// and a follower that replicates it.
func leaderAndFollower(t *testing.T, cfg TopicConfig, opts ...Option) (leader, follower *Partition) {
	t.Helper()
	leader, _ = newTestPartition(t, cfg, opts...)
	follower, _ = newTestPartition(t, cfg, opts...)
	return leader, follower
}

// replicaRead returns the leader's batches from offset to its log end, as
// a follower's fetch gets them.
func replicaRead(t *testing.T, p *Partition, offset int64) []byte {
	t.Helper()
	r, err := p.Read(offset, ReadReplica, 1<<20, true)
	require.NoError(t, err)
	return r.Records
}

// offsetsOf returns p's offsets.
func offsetsOf(t *testing.T, p *Partition) Offsets {
	t.Helper()
	o, err := p.Offsets()
	require.NoError(t, err)
	return o
}

// batchAt returns where each batch of records starts, and its size.
func batchAt(records []byte) (starts, sizes []int) {
	for pos := 0; pos+12 <= len(records); {
		n := 12 + int(binary.BigEndian.Uint32(records[pos+8:]))
		starts, sizes = append(starts, pos), append(sizes, n)
		pos += n
	}
	return starts, sizes
}

// TestAppendReplicaCopiesTheLeader replicates a leader's batches, in two
// fetches, and checks that the follower's log is the leader's byte for
// byte: offsets, leader epochs and all; that its high watermark did not
// move; and that it recorded the producers and the max timestamp.
func TestAppendReplicaCopiesTheLeader(t *testing.T) {
	leader, follower := leaderAndFollower(t, forever)
	for _, raw := range [][]byte{
		batchtest.Idempotent(7, 1, 0, 100, "a", "b"),
		batchtest.Values(300, "c"),
		batchtest.Idempotent(7, 1, 2, 200, "d", "e", "f"),
		batchtest.Values(150, "g"),
	} {
		_, err := leader.Append(raw)
		require.NoError(t, err)
	}
	records := replicaRead(t, leader, 0)
	// The epoch a leader wrote is kept: make one other than Append's 0.
	starts, _ := batchAt(records)
	binary.BigEndian.PutUint32(records[starts[2]+leaderEpochAt:], 7)

	res, err := follower.AppendReplica(records[:starts[2]])
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 0, LastOffset: 2}, res)
	res, err = follower.AppendReplica(records[starts[2]:])
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 3, LastOffset: 6}, res)

	got := replicaRead(t, follower, 0)
	assert.True(t, bytes.Equal(records, got), "the follower's log is the leader's, byte for byte")
	recs, err := batchtest.Decode(got)
	require.NoError(t, err)
	require.Len(t, recs, 7)
	assert.Equal(t, int32(7), recs[3].LeaderEpoch, "the leader's epoch is kept")
	assert.Equal(t, int32(0), recs[2].LeaderEpoch)

	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 0, LastStable: 0, LogEnd: 7}, offsetsOf(t, follower),
		"the high watermark waits for the leader's")
	off, ts, found, err := follower.MaxTimestamp(ReadReplica)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, []int64{2, 300}, []int64{off, ts}, "the max timestamp is noted")

	// The follower knows the producer, should it lead: a retry is
	// answered with the original offsets, a gap is refused.
	dup, err := follower.Append(batchtest.Idempotent(7, 1, 2, 200, "d", "e", "f"))
	require.NoError(t, err)
	assert.Equal(t, AppendResult{BaseOffset: 3, LastOffset: 5, Duplicate: true}, dup)
	_, err = follower.Append(batchtest.Idempotent(7, 1, 9, 200, "gap"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
}

func TestAppendReplicaRefuses(t *testing.T) {
	leader, _ := leaderAndFollower(t, forever)
	for _, v := range []string{"a", "b", "c"} {
		_, err := leader.Append(batchtest.Values(1, v))
		require.NoError(t, err)
	}
	records := replicaRead(t, leader, 0)
	starts, sizes := batchAt(records)
	corrupt := bytes.Clone(records)
	corrupt[starts[1]+sizes[1]-1] ^= 0xff // a record of the second batch
	badLength := bytes.Clone(records)
	binary.BigEndian.PutUint32(badLength[starts[1]+8:], 10)

	tests := []struct {
		name    string
		before  int      // batches of the leader the follower has
		records []byte   // what it fetched
		want    error    // nil: appended
		wantEnd int64    // the follower's log end after
		wantRes [2]int64 // BaseOffset, LastOffset
	}{
		{"nothing", 0, nil, nil, 0, [2]int64{0, -1}},
		{"nothing, at the end of a log", 2, records[:0], nil, 2, [2]int64{2, 1}},
		{"a partial batch alone", 0, records[:sizes[0]-1], nil, 0, [2]int64{0, -1}},
		{"a trailing partial batch", 0, records[:starts[2]+20], nil, 2, [2]int64{0, 1}},
		{"a trailing partial length", 0, records[:starts[2]+11], nil, 2, [2]int64{0, 1}},
		{"a base offset before the end", 2, records, ErrOffsetMismatch, 2, [2]int64{2, 1}},
		{"a corrupt batch: nothing appended", 0, corrupt, ErrCorruptBatch, 0, [2]int64{0, -1}},
		{"a length shorter than a header", 0, badLength, ErrCorruptBatch, 0, [2]int64{0, -1}},
		{"a control batch whose record is no control record", 0, batchtest.At(0, edited(func(b *kmsg.RecordBatch) { b.Attributes = attrControl })), ErrCorruptBatch, 0, [2]int64{0, -1}},
		{"a transactional batch without a producer id", 0, batchtest.At(0, edited(func(b *kmsg.RecordBatch) { b.Attributes = attrTransaction })), ErrInvalidRecord, 0, [2]int64{0, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			follower, _ := newTestPartition(t, forever)
			if tt.before > 0 {
				_, err := follower.AppendReplica(records[:starts[tt.before-1]+sizes[tt.before-1]])
				require.NoError(t, err)
			}
			res, err := follower.AppendReplica(tt.records)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			} else {
				assert.NoError(t, err)
			}
			if tt.want == nil || tt.want == ErrOffsetMismatch {
				assert.Equal(t, tt.wantRes, [2]int64{res.BaseOffset, res.LastOffset}, "what was appended")
			}
			o := offsetsOf(t, follower)
			assert.Equal(t, tt.wantEnd, o.LogEnd)
			// One record a batch: the first LogEnd batches are kept.
			kept := 0
			if o.LogEnd > 0 {
				kept = starts[o.LogEnd-1] + sizes[o.LogEnd-1]
			}
			assert.True(t, bytes.Equal(records[:kept], replicaRead(t, follower, 0)), "the leader's batches, and no others")
			assert.Zero(t, o.HighWatermark)
		})
	}
}

func TestAppendReplicaAppliesRetention(t *testing.T) {
	leader, follower := leaderAndFollower(t, TopicConfig{Retention: -1, RetentionBytes: 0, MaxMessageBytes: 1 << 20})
	leader.SetHighWatermarkManaged(true) // keep every batch on the leader: retention stops at the high watermark
	for _, v := range []string{"a", "b"} {
		_, err := leader.Append(batchtest.Values(1, v))
		require.NoError(t, err)
	}
	records := replicaRead(t, leader, 0)
	_, sizes := batchAt(records)
	res, err := follower.AppendReplica(records[:sizes[0]])
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.LogStartOffset, "below the high watermark only: nothing goes yet")
	follower.SetHighWatermark(1)
	res, err = follower.AppendReplica(records[sizes[0]:])
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.LogStartOffset, "retention.bytes=0: the batch below the high watermark goes")
	assert.Equal(t, Offsets{LogStart: 1, HighWatermark: 1, LastStable: 1, LogEnd: 2}, offsetsOf(t, follower))
}

func TestSetHighWatermarkClamps(t *testing.T) {
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 0, MaxMessageBytes: 1 << 20})
	p.SetHighWatermarkManaged(true)
	for _, v := range []string{"a", "b", "c", "d"} {
		_, err := p.Append(batchtest.Values(1, v))
		require.NoError(t, err)
	}
	p.SetHighWatermark(2)
	require.NoError(t, p.sweep(clocktest.New().Now())) // retention.bytes=0: the log starts at 2
	tests := []struct {
		name   string
		hw     int64
		wantHW int64
	}{
		{"inside the log", 3, 3},
		{"backwards", 2, 2},
		{"past the end: the end", 10, 4},
		{"before the start: the start", 0, 2},
		{"the end", 4, 4},
	}
	for _, tt := range tests {
		p.SetHighWatermark(tt.hw)
		assert.Equal(t, tt.wantHW, offsetsOf(t, p).HighWatermark, tt.name)
	}
	assert.Equal(t, int64(2), offsetsOf(t, p).LogStart)
}

func TestManagedHighWatermark(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	append3 := func() {
		t.Helper()
		_, err := p.Append(batchtest.Values(1, "a", "b", "c"))
		require.NoError(t, err)
	}
	append3()
	p.SetHighWatermarkManaged(true)
	append3()
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 3, LastStable: 3, LogEnd: 6}, offsetsOf(t, p),
		"managed: Append leaves the high watermark where it was")

	steps := []struct {
		hw     int64
		moved  bool
		wantHW int64
	}{
		{4, true, 4},
		{4, false, 4},
		{2, false, 4},  // never backwards
		{100, true, 6}, // clamped at the log end
		{7, false, 6},
	}
	for _, s := range steps {
		assert.Equal(t, s.moved, p.AdvanceHighWatermark(s.hw), "advance to %d", s.hw)
		assert.Equal(t, s.wantHW, offsetsOf(t, p).HighWatermark, "advance to %d", s.hw)
	}
	append3()
	r, err := p.Read(0, ReadUncommitted, 1<<20, false)
	require.NoError(t, err)
	recs, err := batchtest.Decode(r.Records)
	require.NoError(t, err)
	assert.Len(t, recs, 6, "consumers read below the high watermark only")

	p.SetHighWatermarkManaged(false)
	assert.Equal(t, int64(9), offsetsOf(t, p).HighWatermark, "unmanaged again: at the log end at once")
	append3()
	assert.Equal(t, int64(12), offsetsOf(t, p).HighWatermark, "and Append moves it again")
}

// TestTruncateToRebuildsProducers truncates inside an idempotent
// producer's batch: the log is cut before that batch, and the producer's
// next sequence is what the log holds.
func TestTruncateToRebuildsProducers(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	for _, step := range []struct {
		seq int32
		n   int
	}{{0, 2}, {2, 3}, {5, 1}} { // offsets 0-1, 2-4, 5
		_, err := produce(t, p, 1, 0, step.seq, step.n)
		require.NoError(t, err)
	}
	_, err := p.Append(batchtest.Values(9000, "late")) // offset 6, the largest timestamp
	require.NoError(t, err)

	require.NoError(t, p.TruncateTo(7), "at the end: nothing to do")
	require.NoError(t, p.TruncateTo(3), "inside the batch at 2-4")
	assert.Equal(t, Offsets{LogStart: 0, HighWatermark: 2, LastStable: 2, LogEnd: 2}, offsetsOf(t, p),
		"cut before the batch holding 3, the high watermark with it")
	_, ts, found, err := p.MaxTimestamp(ReadReplica)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, int64(1), ts, "the max timestamp is the batches left's")

	_, err = produce(t, p, 1, 0, 5, 1)
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "the batches after 1 are gone from the producer's state")
	res, err := produce(t, p, 1, 0, 0, 2)
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "the batch kept is still recognised")
	res, err = produce(t, p, 1, 0, 2, 3)
	require.NoError(t, err)
	assert.False(t, res.Duplicate)
	assert.Equal(t, int64(2), res.BaseOffset, "the producer goes on from what the log holds")
}

func TestTruncateToBeforeTheLogStartResets(t *testing.T) {
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 0, MaxMessageBytes: 1 << 20})
	for range 3 {
		_, err := produce(t, p, 1, 0, int32(offsetsOf(t, p).LogEnd), 1)
		require.NoError(t, err)
	}
	require.Equal(t, int64(3), offsetsOf(t, p).LogStart, "retention.bytes=0 kept nothing")
	require.NoError(t, p.TruncateTo(1))
	assert.Equal(t, Offsets{LogStart: 1, HighWatermark: 1, LastStable: 1, LogEnd: 1}, offsetsOf(t, p))
	_, err := produce(t, p, 1, 0, 17, 1)
	assert.NoError(t, err, "the producer is forgotten: it may start anywhere")
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	for _, start := range []int64{0, 2, 4, 100} {
		p, _ := newTestPartition(t, forever)
		_, err := produce(t, p, 1, 0, 0, 2)
		require.NoError(t, err)
		_, err = produce(t, p, 1, 0, 2, 2)
		require.NoError(t, err)
		require.NoError(t, p.TruncateFullyAndStartAt(start))
		assert.Equal(t, Offsets{LogStart: start, HighWatermark: start, LastStable: start, LogEnd: start}, offsetsOf(t, p))
		_, _, found, err := p.MaxTimestamp(ReadReplica)
		require.NoError(t, err)
		assert.False(t, found, "start %d: no max timestamp", start)
		res, err := produce(t, p, 1, 0, 17, 1)
		require.NoError(t, err, "start %d: the producer is forgotten", start)
		assert.Equal(t, start, res.BaseOffset, "start %d: appends go on at the start", start)
	}
	p, _ := newTestPartition(t, forever)
	assert.ErrorIs(t, p.TruncateFullyAndStartAt(-1), ErrOffsetOutOfRange)
}

func TestReplicationOnADeletedPartition(t *testing.T) {
	s, _ := newTestStore(t)
	topic, err := s.CreateTopic("gone", 1, forever)
	require.NoError(t, err)
	p := topic.Partitions[0]
	_, err = p.Append(batchtest.Values(1, "a"))
	require.NoError(t, err)
	_, err = s.DeleteTopic("gone")
	require.NoError(t, err)
	_, err = p.AppendReplica(nil)
	assert.ErrorIs(t, err, ErrDeleted)
	assert.ErrorIs(t, p.TruncateTo(0), ErrDeleted)
	assert.ErrorIs(t, p.TruncateFullyAndStartAt(0), ErrDeleted)
	assert.False(t, p.AdvanceHighWatermark(5))
	p.SetHighWatermark(0) // does nothing, and does not panic
	p.SetHighWatermarkManaged(false)
}
