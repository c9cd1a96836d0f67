package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// splitChunks yields b in chunks of size n: a stream whose chunks cut
// records anywhere.
type splitChunks struct {
	b []byte
	n int
}

func (s *splitChunks) next() ([]byte, error) {
	if len(s.b) == 0 {
		return nil, errEndOfChunks
	}
	k := min(s.n, len(s.b))
	c := s.b[:k]
	s.b = s.b[k:]
	return c, nil
}

// errEndOfChunks is io.EOF, wrapped, as a decompressor's end may be.
var errEndOfChunks = fmt.Errorf("no more chunks: %w", io.EOF)

// FuzzParseRecord: a record read in place (parseRecord) and the same bytes
// read a byte at a time (recordWalker, bounded by the record's length)
// agree on everything: the deltas, the bytes the fields take, and the
// error, word for word.
func FuzzParseRecord(f *testing.F) {
	for _, seed := range [][]byte{
		batchtest.Records(rec(0, "one"))[1:],
		batchtest.Records(kmsg.Record{Key: []byte("k"), Value: []byte("v"), TimestampDelta64: -5,
			Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}})[1:],
		rawRecord(0, -2, nil)[1:],
		rawRecord(0, 1, binary.AppendVarint(nil, -1))[1:],
		{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f},
		{0, 0, 0xff, 0xff, 0xff, 0xff},
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		ts, delta, used, err := parseRecord(rec)
		w := window{b: rec}
		rw := recordWalker{src: &w, bounded: true, left: int64(len(rec))}
		wts, wdelta, werr := rw.record()
		if werr != nil || err != nil {
			require.Equal(t, recordError(0, werr), recordError(0, err), "the error")
			return
		}
		require.Equal(t, wts, ts, "the timestamp delta")
		require.Equal(t, wdelta, delta, "the offset delta")
		require.Equal(t, len(rec)-int(rw.left), used, "the bytes the fields take")
	})
}

// FuzzWalkChunked: a batch's records walked in place and walked as a
// stream whose chunks cut them anywhere (every record then read a byte at
// a time across chunks, or in place within one) are accepted or refused
// alike. Seeds are FuzzValidateBatch's.
func FuzzWalkChunked(f *testing.F) {
	for _, seed := range validateSeeds() {
		for _, n := range []uint8{1, 3, 7, 64} {
			f.Add(seed, n)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, n uint8) {
		b, err := ParseBatch(seal(raw))
		if err != nil || b.attrs&attrCompression != codecNone {
			return
		}
		records := b.raw[batchOverhead:]
		whole := window{b: records}
		wholeErr := walkRecords(&whole, b)
		chunked := window{src: &splitChunks{b: records, n: max(int(n), 1)}}
		chunkedErr := walkRecords(&chunked, b)
		if wholeErr == nil {
			require.NoError(t, chunkedErr)
			return
		}
		require.Error(t, chunkedErr, "refused in place (%v), accepted in chunks", wholeErr)
		require.ErrorIs(t, chunkedErr, ErrInvalidRecord, "%v, in place %v", chunkedErr, wholeErr)
	})
}
