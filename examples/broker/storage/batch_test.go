package storage

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/internal/clocktest"
)

// edited returns a well-formed batch of two records with edit applied to
// its header before the length and checksum are computed.
func edited(edit func(*kmsg.RecordBatch)) []byte {
	b := batchtest.Header(2, 1000)
	b.Records = batchtest.Records(kmsg.Record{Value: []byte("a")}, kmsg.Record{OffsetDelta: 1, Value: []byte("b")})
	edit(&b)
	return batchtest.Encode(b)
}

func TestParseBatch(t *testing.T) {
	good := batchtest.Values(1000, "a", "b")
	flip := func(raw []byte, at int) []byte {
		out := append([]byte(nil), raw...)
		out[at] ^= 0x01
		return out
	}
	tests := []struct {
		name string
		raw  []byte
		want error // nil: accepted
	}{
		{"well formed", good, nil},
		{"idempotent", batchtest.Idempotent(3, 0, 0, 1000, "a"), nil},
		{"a base offset the client set is ignored", edited(func(b *kmsg.RecordBatch) { b.FirstOffset = 42 }), nil},
		{"no bytes", nil, ErrInvalidRecord},
		{"shorter than a header", good[:60], ErrCorruptBatch},
		{"length past the bytes sent", good[:len(good)-1], ErrCorruptBatch},
		{"two batches", append(append([]byte(nil), good...), good...), ErrInvalidRecord},
		{"length below a header", func() []byte {
			out := append([]byte(nil), good...)
			out[8], out[9], out[10], out[11] = 0, 0, 0, 10
			return out[:22]
		}(), ErrCorruptBatch},
		{"magic 1", edited(func(b *kmsg.RecordBatch) { b.Magic = 1 }), ErrCorruptBatch},
		{"a flipped bit in a record", flip(good, len(good)-1), ErrCorruptBatch},
		{"a flipped bit in the attributes", flip(good, 22), ErrCorruptBatch},
		{"a flipped bit in the checksum", flip(good, 18), ErrCorruptBatch},
		{"no records", edited(func(b *kmsg.RecordBatch) { b.NumRecords, b.LastOffsetDelta = 0, -1 }), ErrCorruptBatch},
		{"last offset delta disagrees", edited(func(b *kmsg.RecordBatch) { b.LastOffsetDelta = 5 }), ErrCorruptBatch},
		{"unknown compression", edited(func(b *kmsg.RecordBatch) { b.Attributes = 7 }), ErrCorruptBatch},
		{"control batch", edited(func(b *kmsg.RecordBatch) { b.Attributes = 0x20 }), ErrInvalidRecord},
		{"transactional", edited(func(b *kmsg.RecordBatch) { b.Attributes = 0x10; b.ProducerID, b.FirstSequence = 1, 0 }), nil},
		{"transactional without a sequence", edited(func(b *kmsg.RecordBatch) { b.Attributes = 0x10; b.ProducerID = 1 }), ErrInvalidRecord},
		{"transactional without a producer", edited(func(b *kmsg.RecordBatch) { b.Attributes = 0x10 }), ErrInvalidRecord},
		{"producer without sequence", edited(func(b *kmsg.RecordBatch) { b.ProducerID = 1 }), ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBatch(tt.raw)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, len(tt.raw), b.Info().Size, "size")
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestParseBatchInfo(t *testing.T) {
	b, err := ParseBatch(batchtest.Idempotent(9, 2, 10, 1234, "a", "b", "c"))
	require.NoError(t, err)
	info := b.Info()
	assert.Equal(t, int64(3), info.NumRecords())
	assert.Equal(t, int64(1234), info.MaxTimestamp)
	assert.Equal(t, int64(9), info.ProducerID)
	assert.Equal(t, int16(2), info.ProducerEpoch)
	assert.Equal(t, int32(10), info.FirstSequence)
	assert.Equal(t, int32(12), info.LastSequence)
}

func TestParseTransactionalBatches(t *testing.T) {
	b, err := ParseBatch(batchtest.Transactional(4, 1, 0, 1, "a"))
	require.NoError(t, err)
	assert.True(t, b.Info().Transactional)
	assert.Equal(t, ControlNone, b.Info().Control)

	_, err = ParseBatch(batchtest.Transactional(-1, -1, -1, 1, "a"))
	assert.ErrorIs(t, err, ErrInvalidRecord, "transactional without a producer id")
	_, err = ParseBatch(batchtest.Transactional(4, 1, -1, 1, "a"))
	assert.ErrorIs(t, err, ErrInvalidRecord, "transactional without a sequence")
	_, err = ParseBatch(batchtest.Marker(4, 1, true, 0, 1))
	assert.ErrorIs(t, err, ErrInvalidRecord, "clients may not write markers")

	marker := batchtest.At(9, batchtest.Marker(4, 1, false, 3, 1))
	stored, err := ParseStoredBatch(marker)
	require.NoError(t, err, "a log holds markers")
	assert.Equal(t, ControlAbort, stored.Info().Control)
	assert.True(t, stored.Info().Transactional)
	assert.Equal(t, int32(-1), stored.Info().LastSequence)

	head, err := ReadBatchHeader(marker[:BatchHeaderSize])
	require.NoError(t, err)
	assert.Equal(t, ControlUnread, head.Control, "a header alone does not say which marker")
	whole, err := ReadBatchHeader(marker)
	require.NoError(t, err)
	assert.Equal(t, stored.Info(), whole, "the whole batch does")
}

func TestPlaceKeepsTheChecksumValid(t *testing.T) {
	b, err := ParseBatch(batchtest.Values(1000, "a", "b"))
	require.NoError(t, err)
	placed := b.place(1<<40, 7, clocktest.New().Now())
	assert.Equal(t, int64(1<<40), placed.info.BaseOffset)
	assert.Equal(t, int64(1<<40+1), placed.info.LastOffset)
	again, err := ParseBatch(placed.raw)
	require.NoError(t, err, "the checksum covers neither the base offset nor the leader epoch")
	assert.Equal(t, placed.info.Size, again.info.Size)
	recs, err := batchtest.Decode(placed.raw)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<40+1), recs[1].Offset)
	assert.Equal(t, int32(7), recs[0].LeaderEpoch)
	assert.Same(t, &b.raw[0], &placed.raw[0], "the log keeps the client's bytes, written in place: no copy")
}

func TestAddSequenceWraps(t *testing.T) {
	assert.Equal(t, int32(5), addSequence(3, 2))
	assert.Equal(t, int32(math.MaxInt32), addSequence(math.MaxInt32-1, 1))
	assert.Equal(t, int32(0), addSequence(math.MaxInt32, 1))
	assert.Equal(t, int32(2), addSequence(math.MaxInt32-1, 4))
	assert.True(t, inSequence(math.MaxInt32, 0))
	assert.False(t, inSequence(3, 5))
}

// FuzzParseBatch checks that no input panics ParseBatch, that every error
// is one of the documented ones, and that an accepted batch's info agrees
// with its bytes; and that a batch a log may hold (ParseStoredBatch, which
// reads a control batch's type) reads back alike from its header
// (ReadBatchHeader given the whole batch).
func FuzzParseBatch(f *testing.F) {
	f.Add(batchtest.Values(1, "a"))
	f.Add(batchtest.Idempotent(1, 0, 0, 1, "a", "b"))
	f.Add(edited(func(b *kmsg.RecordBatch) { b.LastOffsetDelta = 9 }))
	f.Add(batchtest.Transactional(1, 0, 0, 1, "a"))
	f.Add(batchtest.Marker(1, 0, true, 3, 1))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if stored, err := ParseStoredBatch(raw); err == nil {
			h, err := ReadBatchHeader(raw)
			require.NoError(t, err, "a whole batch's header reads")
			assert.Equal(t, stored.Info(), h)
			assert.NotEqual(t, ControlUnread, h.Control, "read from the whole batch")
		} else {
			known := errors.Is(err, ErrCorruptBatch) || errors.Is(err, ErrInvalidRecord)
			assert.True(t, known, "unexpected error %v", err)
		}
		b, err := ParseBatch(raw)
		if err != nil {
			known := errors.Is(err, ErrCorruptBatch) || errors.Is(err, ErrInvalidRecord)
			assert.True(t, known, "unexpected error %v", err)
			return
		}
		assert.Equal(t, len(raw), b.Info().Size)
		assert.GreaterOrEqual(t, b.Info().NumRecords(), int64(1))
	})
}

func TestTransactionalProducer(t *testing.T) {
	raw := batchtest.Transactional(7, 3, 0, 1000, "v")
	id, epoch, ok := TransactionalProducer(raw)
	require.True(t, ok)
	assert.Equal(t, int64(7), id)
	assert.Equal(t, int16(3), epoch)
	b, err := ParseBatch(raw)
	require.NoError(t, err, "the same header ParseBatch reads")
	assert.Equal(t, b.Info().ProducerID, id)
	assert.Equal(t, b.Info().ProducerEpoch, epoch)

	_, _, ok = TransactionalProducer(batchtest.Idempotent(7, 3, 0, 1000, "v"))
	assert.False(t, ok, "an idempotent batch outside a transaction")
	_, _, ok = TransactionalProducer(raw[:20])
	assert.False(t, ok, "too short")
}
