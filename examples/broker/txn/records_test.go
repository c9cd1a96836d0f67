package txn

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

func set(tps ...TopicPartition) partitions {
	ps := make(partitions, len(tps))
	for _, tp := range tps {
		ps[tp] = struct{}{}
	}
	return ps
}

// TestRecordsRoundTrip: each state's record, encoded by kmsg as Kafka's
// TransactionLog writes it, decodes to the same metadata (the last
// producer id and epoch, in memory only in Kafka's version 1, come back
// as none).
func TestRecordsRoundTrip(t *testing.T) {
	parts := set(tp("orders", 2), tp("orders", 0), tp("audit", 1))
	for _, tt := range []struct {
		name string
		m    metadata
	}{
		{"Empty", metadata{pid: 7, epoch: 0, timeoutMs: 60000, state: Empty, start: -1, updated: 1000}},
		{"Ongoing", metadata{pid: 7, epoch: 3, timeoutMs: 60000, state: Ongoing, parts: parts, start: 900, updated: 1000}},
		{"PrepareCommit", metadata{pid: 7, epoch: 3, timeoutMs: 60000, state: PrepareCommit, parts: parts, start: 900, updated: 1000}},
		{"PrepareAbort", metadata{pid: 7, epoch: 4, timeoutMs: 60000, state: PrepareAbort, parts: parts, start: 900, updated: 1000}},
		{"CompleteCommit", metadata{pid: 7, epoch: 3, timeoutMs: 60000, state: CompleteCommit, start: 900, updated: 1000}},
		{"CompleteAbort", metadata{pid: 7, epoch: 3, timeoutMs: 60000, state: CompleteAbort, start: 900, updated: 1000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.m
			in.lastPID, in.lastEpoch = 6, 2 // not written
			rec := valueRecord("tx", &in)

			var k kmsg.TxnMetadataKey
			require.NoError(t, k.ReadFrom(rec.Key))
			assert.Equal(t, int16(0), k.Version, "key version")
			assert.Equal(t, "tx", k.TransactionalID)
			var v kmsg.TxnMetadataValue
			require.NoError(t, v.ReadFrom(rec.Value))
			assert.Equal(t, int16(0), v.Version, "value version")
			assert.Equal(t, int8(tt.m.state), int8(v.State), "state id")
			if tt.m.state == Empty {
				assert.Nil(t, v.Topics, "Empty writes null partitions, as Kafka")
			} else {
				assert.NotNil(t, v.Topics, "the other states write an array")
			}
			if tt.m.state == Ongoing {
				assert.Equal(t, []kmsg.TxnMetadataValueTopic{
					{Topic: "audit", Partitions: []int32{1}}, {Topic: "orders", Partitions: []int32{0, 2}},
				}, v.Topics, "grouped by topic")
			}

			id, out, err := decode(rec)
			require.NoError(t, err)
			assert.Equal(t, "tx", id)
			want := tt.m
			want.lastPID, want.lastEpoch = noProducerID, noEpoch
			if len(want.parts) == 0 {
				want.parts = nil
			}
			assert.Equal(t, &want, out)
		})
	}
}

// TestRecordsReadVersion1: a flexible value (version 1, with KIP-890's
// tagged fields, as Kafka 4 writes it under transaction version 2) is
// read too: the client's transaction version and the previous producer
// id; the next producer id only in a Prepare, which it completes to.
func TestRecordsReadVersion1(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = 1, 9, 2, 30000
	v.State = kmsg.TransactionState(Ongoing)
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{4}}}
	v.StartTimestamp, v.LastUpdateTimestamp = 5, 6
	v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = 8, 10, 2
	id, m, err := decode(kmsg.Record{Key: key("x"), Value: v.AppendTo(nil)})
	require.NoError(t, err)
	assert.Equal(t, "x", id)
	assert.Equal(t, &metadata{pid: 9, lastPID: 8, epoch: 2, lastEpoch: -1, timeoutMs: 30000, state: Ongoing,
		parts: set(tp("t", 4)), start: 5, updated: 6, tv2: true}, m)

	v.State = kmsg.TransactionState(PrepareCommit)
	_, m, err = decode(kmsg.Record{Key: key("x"), Value: v.AppendTo(nil)})
	require.NoError(t, err)
	assert.True(t, m.rotating)
	assert.Equal(t, int64(10), m.nextPID)
}

// TestRecordsVersion2RoundTrip: a transaction version 2 producer's
// metadata is written as a version 1 value and read back whole.
func TestRecordsVersion2RoundTrip(t *testing.T) {
	in := metadata{pid: 7, lastPID: 6, epoch: math.MaxInt16, lastEpoch: -1, timeoutMs: 60000, state: PrepareAbort,
		parts: set(tp("t", 0)), start: 900, updated: 1000, tv2: true, rotating: true, nextPID: 8}
	rec := valueRecord("x", &in)
	var v kmsg.TxnMetadataValue
	require.NoError(t, v.ReadFrom(rec.Value))
	assert.Equal(t, int16(1), v.Version)
	assert.Equal(t, int16(2), v.ClientTransactionVersion)
	_, out, err := decode(rec)
	require.NoError(t, err)
	assert.Equal(t, &in, out)
}

// TestRecordsRefused: a record this package does not write fails the
// replay, rather than forget a transaction.
func TestRecordsRefused(t *testing.T) {
	dead := kmsg.NewTxnMetadataValue()
	dead.State = kmsg.TransactionState(Dead)
	offsetKey := kmsg.NewOffsetCommitKey()
	offsetKey.Version, offsetKey.Group = 1, "g"
	for _, tt := range []struct {
		name string
		rec  kmsg.Record
	}{
		{"short key", kmsg.Record{Key: []byte{0}}},
		{"another key version: an offsets record", kmsg.Record{Key: offsetKey.AppendTo(nil)}},
		{"a state never written", kmsg.Record{Key: key("x"), Value: dead.AppendTo(nil)}},
		{"a value cut short", kmsg.Record{Key: key("x"), Value: []byte{0, 0, 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Replay
			_, err := r.Apply(encodeBatch(time.Now(), tt.rec))
			assert.ErrorIs(t, err, ErrRecord)
		})
	}
}

// TestReplayLatestWins: the latest record of an id wins, a tombstone drops
// it; every record counts as applied, the latest of each live id as live;
// a rewrite replays to the same ids, in batches as bounded.
func TestReplayLatestWins(t *testing.T) {
	a1 := metadata{pid: 1, epoch: 0, timeoutMs: 1000, state: Empty, start: -1, updated: 10}
	a2 := metadata{pid: 1, epoch: 0, timeoutMs: 1000, state: Ongoing, parts: set(tp("t", 0)), start: 11, updated: 11}
	b := metadata{pid: 2, epoch: 5, timeoutMs: 1000, state: CompleteCommit, start: 3, updated: 12}
	c := metadata{pid: 3, epoch: 0, timeoutMs: 1000, state: Empty, start: -1, updated: 13}
	now := time.UnixMilli(100)
	var r Replay
	for _, batch := range [][]byte{
		encodeBatch(now, valueRecord("a", &a1), valueRecord("b", &b)),
		encodeBatch(now, valueRecord("a", &a2)),
		encodeBatch(now, valueRecord("c", &c)),
		encodeBatch(now, tombstone("c")),
	} {
		_, err := r.Apply(batch)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(5), r.Records())
	assert.Equal(t, int64(2), r.Live(), "a and b")
	require.Len(t, r.Values(), 2)
	assert.Equal(t, Ongoing, r.Values()["a"].state)
	assert.Equal(t, CompleteCommit, r.Values()["b"].state)

	batches := r.Rewrite(now, 1, 1<<20)
	require.Len(t, batches, 2, "one record a batch")
	var again Replay
	for _, batch := range batches {
		_, err := again.Apply(batch)
		require.NoError(t, err)
	}
	assert.Equal(t, r.Values(), again.Values(), "the rewrite replays to the same ids")
	assert.Len(t, r.Rewrite(now, 1000, 1<<20), 1, "all in one batch")
	assert.Len(t, r.Rewrite(now, 1000, 1), 2, "a record larger than maxBytes is alone")
}

// TestStateNames: Kafka's names, as DescribeTransactions shows them.
func TestStateNames(t *testing.T) {
	want := []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
		"PrepareEpochFence"}
	for i, name := range want {
		assert.Equal(t, name, State(i).String())
		s, ok := ParseState(name)
		assert.True(t, ok, name)
		assert.Equal(t, State(i), s)
	}
	_, ok := ParseState("ongoing")
	assert.False(t, ok, "names are case-sensitive, as Kafka's")
}
