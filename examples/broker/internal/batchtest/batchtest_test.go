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
