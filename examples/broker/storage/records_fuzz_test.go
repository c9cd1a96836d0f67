package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// fuzzBound is the inflated bound of the fuzz target: small, so that the
// inputs that inflate stay fast.
const fuzzBound = 64 << 10

// FuzzValidateBatch feeds arbitrary bytes, their length and checksum
// fields set to agree with them, to a client batch's validation
// (ParseBatch, then the records). Whatever the bytes, nothing panics, and
// a batch accepted is one a consumer reads as its header says: franz-go's
// own decompressor (a second implementation of the codecs) inflates it,
// and kmsg decodes as many records as the header counts, at offset deltas
// 0, 1, 2..., nothing left over. The seeds (in
// testdata/fuzz/FuzzValidateBatch, run by go test) are valid batches of
// every codec and each lie TestValidateRecordsRefusesLies tells.
func FuzzValidateBatch(f *testing.F) {
	for _, seed := range validateSeeds() {
		f.Add(seed)
	}
	dec := kgo.DefaultDecompressor()
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = seal(raw)
		b, err := ParseBatch(raw)
		if err != nil {
			return
		}
		if validateRecords(b, fuzzBound) != nil {
			return
		}
		records := raw[batchOverhead:]
		if codec := b.attrs & attrCompression; codec != codecNone {
			records, err = dec.Decompress(records, kgo.CompressionCodecType(codec))
			require.NoError(t, err, "accepted, but franz-go cannot decompress it")
		}
		rd := kbin.Reader{Src: records}
		for i := range b.numRecords {
			length := rd.Varint()
			span := rd.Span(int(length))
			require.True(t, rd.Ok(), "record %d of %d cut short", i, b.numRecords)
			var r kmsg.Record
			full := append(kbin.AppendVarint(nil, length), span...)
			require.NoError(t, r.ReadFrom(full), "record %d", i)
			require.Equal(t, i, r.OffsetDelta)
		}
		require.Empty(t, rd.Src, "nothing after the records counted")
	})
}

// seal returns a copy of raw sealed as a client would: its length and
// checksum agree with its bytes, so that mutations reach the records
// rather than die at the checksum.
func seal(raw []byte) []byte {
	if len(raw) < batchOverhead {
		return raw
	}
	raw = bytes.Clone(raw)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-lengthOverhead))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[crcCoversFrom:], castagnoli))
	return raw
}

// validateSeeds returns the fuzz target's seeds: valid batches of every
// codec, and lies.
func validateSeeds() [][]byte {
	recs := batchtest.Records(
		kmsg.Record{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v0"), TimestampDelta64: 5},
		kmsg.Record{OffsetDelta: 1, Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}},
	)
	h := batchtest.Header(2, 1000)
	h.MaxTimestamp = 1005
	seeds := [][]byte{batchOf(h, 2, 0, recs)}
	for codec := int16(1); codec <= 4; codec++ {
		seeds = append(seeds, batchOf(h, 2, codec, recs))
	}
	one := batchtest.Records(rec(0, "one"))
	lies := batchtest.Header(1, 1000)
	seeds = append(seeds,
		batchOf(lies, 1000, 0, one),
		batchOf(lies, 1, codecGzip, batchtest.Records(rec(0, "a"), rec(1, "b"), rec(2, "c"))),
		batchOf(lies, 1, 0, rawRecord(0, -2, nil)),
		batchOf(lies, 2, codecZstd, batchtest.Records(rec(0, "a"), rec(0, "b"))),
	)
	garbage := lies
	garbage.Attributes = codecSnappy
	garbage.Records = bytes.Repeat([]byte{0xde, 0xad}, 32)
	return append(seeds, batchtest.Encode(garbage))
}
