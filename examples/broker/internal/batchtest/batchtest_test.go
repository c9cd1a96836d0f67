package batchtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	raw := append(Values(1000, "a", "bb"), Idempotent(7, 1, 3, 2000, "ccc")...)
	recs, err := Decode(raw)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"a", "bb", "ccc"}, []string{string(recs[0].Value), string(recs[1].Value), string(recs[2].Value)})
	assert.Equal(t, []int64{0, 1, 0}, []int64{recs[0].Offset, recs[1].Offset, recs[2].Offset})

	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(Values(5, "x")))
	assert.Equal(t, int32(len(Values(5, "x"))-12), b.Length, "the length counts what follows it")
}

func TestDecodeRefusesTruncation(t *testing.T) {
	raw := Values(1, "abc")
	_, err := Decode(raw[:len(raw)-1])
	assert.Error(t, err)
}

func TestMarkerIsAControlBatch(t *testing.T) {
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(Marker(7, 2, true, 5, 1000)))
	assert.Equal(t, int16(0x30), b.Attributes, "transactional and control")
	assert.Equal(t, []int64{7, 2, -1}, []int64{b.ProducerID, int64(b.ProducerEpoch), int64(b.FirstSequence)})
	recs, err := Decode(Marker(7, 2, true, 5, 1000))
	require.NoError(t, err)
	require.Len(t, recs, 1)
	var key kmsg.ControlRecordKey
	require.NoError(t, key.ReadFrom(recs[0].Key))
	assert.Equal(t, kmsg.ControlRecordKeyType(1), key.Type, "commit")
	var value kmsg.EndTxnMarker
	require.NoError(t, value.ReadFrom(recs[0].Value))
	assert.Equal(t, int32(5), value.CoordinatorEpoch)

	require.NoError(t, b.ReadFrom(Transactional(7, 2, 0, 1000, "a")))
	assert.Equal(t, int16(0x10), b.Attributes, "transactional")
}
