package sharestate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	keyA = Key{Group: "g", Topic: [16]byte{1, 2, 3}, Partition: 0}
	keyB = Key{Group: "g", Topic: [16]byte{1, 2, 3}, Partition: 7}
)

func TestKeyString(t *testing.T) {
	k := Key{Group: "grp", Topic: [16]byte{0xfb, 0xff}, Partition: 12}
	assert.Equal(t, "grp:-_8AAAAAAAAAAAAAAAAAAA:12", k.String(), "Kafka's Uuid.toString: URL-safe base64, unpadded")
	k.Partition = -2147483648 // the longest number
	assert.Equal(t, "grp:-_8AAAAAAAAAAAAAAAAAAA:-2147483648", k.String())
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = k.String() }), "one allocation")
}

func TestRecordRoundTrip(t *testing.T) {
	st := &State{StateEpoch: 3, LeaderEpoch: 9, StartOffset: 100, Batches: []Batch{
		{First: 100, Last: 104, DeliveryState: 2, DeliveryCount: 1},
		{First: 105, Last: 105, DeliveryState: 1, DeliveryCount: 4},
	}}
	k, got, err := decode(record(keyA, st))
	require.NoError(t, err)
	assert.Equal(t, keyA, k)
	assert.Equal(t, st, got)

	k, got, err = decode(record(keyB, nil))
	require.NoError(t, err)
	assert.Equal(t, keyB, k)
	assert.Nil(t, got, "a tombstone")

	// The value is kmsg's own message, readable as one.
	var w kmsg.WriteShareGroupStateRequest
	w.Version = valueVersion
	require.NoError(t, w.ReadFrom(record(keyA, st).Value))
	assert.Equal(t, int64(100), w.Topics[0].Partitions[0].StartOffset)

	_, _, err = decode(kmsg.Record{Key: []byte{0, 1}})
	assert.ErrorIs(t, err, ErrRecord)
}

func TestReplayRewrite(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	var r Replay
	raw := encodeBatch(now, record(keyA, &State{StartOffset: 1}), record(keyB, &State{StartOffset: 2}))
	raw = append(raw, encodeBatch(now, record(keyA, &State{StateEpoch: 1, StartOffset: 5}))...)
	raw = append(raw, encodeBatch(now, record(keyB, nil))...)
	_, err := r.Apply(raw)
	require.NoError(t, err)
	assert.Equal(t, int64(4), r.Records())
	assert.Equal(t, int64(1), r.Live())
	assert.Equal(t, &State{StateEpoch: 1, StartOffset: 5}, r.Values()[keyA])

	var again Replay
	for _, b := range r.Rewrite(now, 1000, 1<<20) {
		_, err := again.Apply(b)
		require.NoError(t, err)
	}
	assert.Equal(t, r.Values(), again.Values(), "the rewrite replays to the same states")
}
