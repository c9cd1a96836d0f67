package records

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

var t0 = time.UnixMilli(1_700_000_000_123)

func tp(topic string, p int32) group.TopicPartition {
	return group.TopicPartition{Topic: topic, Partition: p}
}

func off(topic string, p int32, o int64) group.StoredOffset {
	return group.StoredOffset{TopicPartition: tp(topic, p), Offset: o, LeaderEpoch: 3, Metadata: "m", Committed: t0}
}

// typed is group g's metadata before any rebalance: its protocol type
// alone.
func typed(g, ptype string) group.StoredGroup {
	return group.StoredGroup{Group: g, ProtocolType: ptype}
}

// stable is group g of two members after a rebalance of generation gen:
// a dynamic leader and a static member.
func stable(g string, gen int32) group.StoredGroup {
	return group.StoredGroup{
		Group: g, ProtocolType: "consumer", Generation: gen, Protocol: "cooperative-sticky", Leader: "a-1",
		StateSince: t0.Add(time.Second),
		Members: []group.StoredMember{
			{MemberID: "a-1", ClientID: "a", ClientHost: "/10.0.0.1", RebalanceTimeout: time.Minute,
				SessionTimeout: 45 * time.Second, Subscription: []byte("sub-a"), Assignment: []byte("as-a")},
			{MemberID: "i-2", InstanceID: "i", ClientID: "b", ClientHost: "/10.0.0.2", RebalanceTimeout: 30 * time.Second,
				SessionTimeout: 10 * time.Second, Subscription: []byte("sub-b"), Assignment: []byte("as-b")},
		},
	}
}

// TestGroupRecord: a group's metadata with its members comes back as it
// was written, in GroupMetadataValue v3, and the latest record of a group
// wins, in a replay and in its rewrite.
func TestGroupRecord(t *testing.T) {
	var gv kmsg.GroupMetadataValue
	require.NoError(t, gv.ReadFrom(Group(stable("g", 4)).Value))
	assert.Equal(t, int16(3), gv.Version)
	require.Len(t, gv.Members, 2)
	require.NotNil(t, gv.Members[1].InstanceID)
	assert.Equal(t, "i", *gv.Members[1].InstanceID)
	assert.Nil(t, gv.Members[0].InstanceID, "a dynamic member's instance id is null")

	empty := typed("e", "consumer")
	empty.Generation, empty.StateSince = 5, t0.Add(time.Minute)
	raw := log(
		[]kmsg.Record{Group(typed("g", "consumer")), Offset("g", off("t", 0, 10))},
		[]kmsg.Record{Group(stable("g", 3))},
		[]kmsg.Record{Group(stable("g", 4))},
		[]kmsg.Record{Group(stable("h", 1))},
		[]kmsg.Record{Group(stable("e", 1))},
		[]kmsg.Record{Group(empty)}, // e became Empty

	)
	var r Replay
	_, err := r.Apply(raw)
	require.NoError(t, err)
	g4 := stable("g", 4)
	g4.Offsets = []group.StoredOffset{at(off("t", 0, 10), 1)}
	h1 := stable("h", 1)
	assert.Equal(t, []group.StoredGroup{empty, g4, h1}, r.Groups())
	assert.Equal(t, int64(4), r.Live(), "g's metadata and offset, h's and e's metadata")

	var again Replay
	_, err = again.Apply(placed(0, r.Rewrite(t0, 100, 1<<20)))
	require.NoError(t, err)
	assert.Equal(t, unplaced(r.Groups()), unplaced(again.Groups()), "the rewrite keeps the latest group records")
}

// log is batches as a partition holds them: placed one after the other,
// read back concatenated.
func log(batches ...[]kmsg.Record) []byte {
	var out []byte
	next := int64(0)
	for _, recs := range batches {
		raw := Batch(t0, recs)
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			panic(err)
		}
		b.FirstOffset = next // as the partition places it; the CRC does not cover it
		next += int64(len(recs))
		out = b.AppendTo(out)
	}
	return out
}

func TestReplay(t *testing.T) {
	explicit := off("t", 2, 7)
	explicit.LeaderEpoch, explicit.ExpireAt = -1, t0.Add(time.Hour)
	raw := log(
		[]kmsg.Record{Group(typed("g", "consumer")), Offset("g", off("t", 0, 10)), Offset("g", off("t", 1, 20)), Offset("g", explicit)},
		[]kmsg.Record{Offset("g", off("t", 0, 11))},
		[]kmsg.Record{Offset("simple", off("u", 0, 1))},
		[]kmsg.Record{Group(typed("gone", "consumer")), Offset("gone", off("u", 0, 1))},
		[]kmsg.Record{OffsetTombstone("g", tp("t", 1)), OffsetTombstone("g", tp("t", 9))},
		[]kmsg.Record{OffsetTombstone("gone", tp("u", 0)), GroupTombstone("gone")},
		[]kmsg.Record{GroupTombstone("never")},
	)
	var r Replay
	next, err := r.Apply(raw)
	require.NoError(t, err)
	assert.Equal(t, int64(13), next, "the offset after the last record")
	assert.Equal(t, []group.StoredGroup{
		{Group: "g", ProtocolType: "consumer", Offsets: []group.StoredOffset{at(off("t", 0, 11), 4), at(explicit, 3)}},
		{Group: "simple", Offsets: []group.StoredOffset{at(off("u", 0, 1), 5)}},
	}, r.Groups())

	t.Run("a group tombstone takes its offsets", func(t *testing.T) {
		var r Replay
		_, err := r.Apply(log([]kmsg.Record{Offset("g", off("t", 0, 1)), GroupTombstone("g")}))
		require.NoError(t, err)
		assert.Empty(t, r.Groups())
	})
	t.Run("a foreign record fails", func(t *testing.T) {
		var r Replay
		_, err := r.Apply(log([]kmsg.Record{{Key: []byte{0, 9, 1}, Value: []byte("x")}}))
		assert.ErrorIs(t, err, ErrRecord)
		_, err = r.Apply(raw[:20])
		assert.ErrorIs(t, err, ErrRecord, "a batch cut short")
	})
}

// TestRecordsAreKafkas decodes the records with kmsg as Kafka's own
// __consumer_offsets records: key versions 1 and 2, value versions 3 and 1.
func TestRecordsAreKafkas(t *testing.T) {
	var k kmsg.OffsetCommitKey
	rec := Offset("g", off("t", 4, 9))
	require.NoError(t, k.ReadFrom(rec.Key))
	assert.Equal(t, int16(1), k.Version)
	assert.Equal(t, "g", k.Group)
	assert.Equal(t, "t", k.Topic)
	assert.Equal(t, int32(4), k.Partition)
	var v kmsg.OffsetCommitValue
	require.NoError(t, v.ReadFrom(rec.Value))
	assert.Equal(t, int16(3), v.Version)
	assert.Equal(t, int64(9), v.Offset)
	assert.Equal(t, int32(3), v.LeaderEpoch)
	assert.Equal(t, t0.UnixMilli(), v.CommitTimestamp)

	var gk kmsg.GroupMetadataKey
	grec := Group(typed("g", "consumer"))
	require.NoError(t, gk.ReadFrom(grec.Key))
	assert.Equal(t, int16(2), gk.Version)
	var gv kmsg.GroupMetadataValue
	require.NoError(t, gv.ReadFrom(grec.Value))
	assert.Equal(t, "consumer", gv.ProtocolType)
	assert.Nil(t, GroupTombstone("g").Value, "a tombstone's value is null")
}
