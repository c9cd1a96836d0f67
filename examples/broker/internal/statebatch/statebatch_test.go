package statebatch

import (
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEncodeWalk(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	recs := []kmsg.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}
	raw := append(Encode(now, 0, -1, -1, recs), Encode(now, AttrTransactional, 7, 2, recs[:1])...)
	// The second batch placed after the first, as the log places it.
	type seen struct {
		key        string
		producer   int64
		attrs      int16
		firstDelta int32
	}
	var got []seen
	next, err := Walk(raw, 0, func(b *kmsg.RecordBatch, rec *kmsg.Record) error {
		got = append(got, seen{string(rec.Key), b.ProducerID, b.Attributes, rec.OffsetDelta})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []seen{{"a", -1, 0, 0}, {"b", -1, 0, 1}, {"a", 7, AttrTransactional, 0}}, got)
	assert.Equal(t, int64(1), next, "the offset after the last batch, as its header says (base 0, one record)")

	stop := errors.New("stop")
	n, err := Walk(raw, 5, func(*kmsg.RecordBatch, *kmsg.Record) error { return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, int64(5), n, "nothing walked whole")

	for name, bad := range map[string][]byte{
		"short":     raw[:8],
		"cut":       raw[:40],
		"truncated": raw[:len(raw)-1],
	} {
		_, err := Walk(bad, 0, func(*kmsg.RecordBatch, *kmsg.Record) error { return nil })
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}

// TestEncodeChecksLengths checks that Encode's batch reads back whole:
// its length and checksum (CRC-32C from the attributes on) are its own,
// each record's length is its encoding's, and that it costs fewer
// allocations than it has records, not three or more a record: every
// coordinator write encodes a batch.
func TestEncodeChecksLengths(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	var recs []kmsg.Record
	for i := range 20 {
		recs = append(recs, kmsg.Record{Key: []byte{byte(i)}, Value: make([]byte, 50+10*i),
			Headers: []kmsg.Header{{Key: "h", Value: make([]byte, i)}}})
	}
	raw := Encode(now, 0, -1, -1, recs)
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(raw))
	assert.Equal(t, int32(len(raw)-12), b.Length, "the length after the offset and length fields")
	assert.Equal(t, int32(crc32.Checksum(raw[21:], castagnoli)), b.CRC, "the checksum of the attributes on")
	i := 0
	_, err := Walk(raw, 0, func(_ *kmsg.RecordBatch, rec *kmsg.Record) error {
		r := *rec
		r.Length = 0
		assert.Equal(t, int32(len(r.AppendTo(nil))-1), rec.Length, "record %d's length", i)
		assert.Equal(t, recs[i].Value, rec.Value, "record %d", i)
		i++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, len(recs), i)

	allocs := testing.AllocsPerRun(20, func() { Encode(now, 0, -1, -1, recs) })
	// The body grows by doubling; the measures share one buffer.
	assert.LessOrEqual(t, allocs, float64(len(recs)), "allocations of a batch of %d records", len(recs))
}
