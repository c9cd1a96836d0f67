package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func TestReadBatchHeader(t *testing.T) {
	raw := batchtest.At(40, batchtest.Idempotent(7, 2, 10, 1234, "a", "b", "c"))
	info, err := ReadBatchHeader(raw[:BatchHeaderSize])
	require.NoError(t, err)
	assert.Equal(t, BatchInfo{BaseOffset: 40, LastOffset: 42, MaxTimestamp: 1234, Size: len(raw),
		ProducerID: 7, ProducerEpoch: 2, FirstSequence: 10, LastSequence: 12}, info)

	stored, err := ParseStoredBatch(raw)
	require.NoError(t, err)
	assert.Equal(t, info, stored.Info(), "the header says what the whole batch says")

	tests := []struct {
		name string
		edit func(b []byte)
	}{
		{"short length", func(b []byte) { b[11] = 10 }},
		{"negative length", func(b []byte) { b[8] = 0xff }},
		{"magic", func(b []byte) { b[16] = 1 }},
		{"negative base offset", func(b []byte) { b[0] = 0xff }},
		{"record count", func(b []byte) { b[60]++ }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), raw...)
			tt.edit(b)
			_, err := ReadBatchHeader(b)
			assert.ErrorIs(t, err, ErrCorruptBatch)
		})
	}
	_, err = ReadBatchHeader(raw[:BatchHeaderSize-1])
	assert.ErrorIs(t, err, ErrCorruptBatch, "too short for a header")

	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1
	_, err = ReadBatchHeader(flipped)
	assert.NoError(t, err, "the header does not cover the records")
	_, err = ParseStoredBatch(flipped)
	assert.ErrorIs(t, err, ErrCorruptBatch, "the whole batch does")
}
