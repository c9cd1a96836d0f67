package storage

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

const validateBound = 1 << 20 // max.message.bytes, as a topic's default

// parseAndValidate is Append's validation of raw.
func parseAndValidate(raw []byte) error {
	b, err := ParseBatch(raw)
	if err != nil {
		return err
	}
	return validateRecords(b, validateBound)
}

// batchOf returns a batch whose header is h (its count and last offset
// delta set from n) and whose records are recs, compressed with codec
// (0: none).
func batchOf(h kmsg.RecordBatch, n int, codec int16, recs []byte) []byte {
	h.NumRecords, h.LastOffsetDelta = int32(n), int32(n-1)
	if codec != 0 {
		h.Attributes |= codec
		recs = batchtest.Compress(codec, recs)
	}
	h.Records = recs
	return batchtest.Encode(h)
}

func rec(offsetDelta int32, value string) kmsg.Record {
	return kmsg.Record{OffsetDelta: offsetDelta, Value: []byte(value)}
}

// TestValidateRecordsAcceptsWhatClientsSend: batches as franz-go builds
// them, with every codec, keys, headers and timestamps that vary.
func TestValidateRecordsAcceptsWhatClientsSend(t *testing.T) {
	recs := batchtest.Records(
		kmsg.Record{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v0"), TimestampDelta64: 5},
		kmsg.Record{OffsetDelta: 1, Value: nil, Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
		kmsg.Record{OffsetDelta: 2, Value: bytes.Repeat([]byte("v"), 10_000), TimestampDelta64: -3},
	)
	h := batchtest.Header(3, 1000)
	h.MaxTimestamp = 1005
	for name, codec := range map[string]int16{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4} {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, parseAndValidate(batchOf(h, 3, codec, recs)))
		})
	}
	t.Run("raw snappy", func(t *testing.T) {
		// librdkafka and others send one raw block, not xerial.
		hh := h
		hh.Attributes = codecSnappy
		hh.Records = s2.EncodeSnappy(nil, recs)
		hh.NumRecords, hh.LastOffsetDelta = 3, 2
		assert.NoError(t, parseAndValidate(batchtest.Encode(hh)))
	})
	t.Run("no timestamps", func(t *testing.T) {
		assert.NoError(t, parseAndValidate(batchtest.Values(-1, "a", "b")))
	})
}

// TestValidateRecordsRefusesLies: each batch lies about its records in one
// way, its header otherwise well formed (the checksum matches).
func TestValidateRecordsRefusesLies(t *testing.T) {
	one := batchtest.Records(rec(0, "one"))
	three := batchtest.Records(rec(0, "a"), rec(1, "b"), rec(2, "c"))
	h := batchtest.Header(1, 1000)
	withRecords := func(n int, codec int16, recs []byte) []byte { return batchOf(h, n, codec, recs) }
	garbage := func(codec int16) []byte {
		hh := h
		hh.Attributes = codec
		hh.Records = bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 64)
		return batchtest.Encode(hh)
	}
	tests := []struct {
		name string
		raw  []byte
		want error
	}{
		{"gzip garbage", garbage(codecGzip), ErrCorruptBatch},
		{"snappy garbage", garbage(codecSnappy), ErrCorruptBatch},
		{"lz4 garbage", garbage(codecLz4), ErrCorruptBatch},
		{"zstd garbage", garbage(codecZstd), ErrCorruptBatch},
		{"count 1,000 over one record", withRecords(1000, 0, one), ErrInvalidRecord},
		{"count 2^31-1 over one record", withRecords(1<<31-1, 0, one), ErrInvalidRecord},
		{"count 1,000 over one compressed record", withRecords(1000, codecLz4, one), ErrInvalidRecord},
		{"count 1 over three records", withRecords(1, 0, three), ErrInvalidRecord},
		{"count 1 over three compressed records", withRecords(1, codecZstd, three), ErrInvalidRecord},
		{"offset deltas out of order", withRecords(2, 0, batchtest.Records(rec(1, "a"), rec(0, "b"))), ErrInvalidRecord},
		{"offset delta repeated", withRecords(2, codecGzip, batchtest.Records(rec(0, "a"), rec(0, "b"))), ErrInvalidRecord},
		{"a record's length past the end", withRecords(1, 0, append(binary.AppendVarint(nil, 100), one[1:]...)), ErrInvalidRecord},
		{"a record's length short of its fields", withRecords(1, 0, append(binary.AppendVarint(nil, int64(len(one)-3)), one[1:]...)), ErrInvalidRecord},
		{"a record's length past its fields", withRecords(1, 0, append(append(binary.AppendVarint(nil, int64(len(one))), one[1:]...), 0)), ErrInvalidRecord},
		{"a negative header count", withRecords(1, 0, rawRecord(0, -2, nil)), ErrInvalidRecord},
		{"a negative header key", withRecords(1, 0, rawRecord(0, 1, binary.AppendVarint(nil, -1))), ErrInvalidRecord},
		{"bytes after the records", withRecords(1, 0, append(append([]byte(nil), one...), 0, 0)), ErrInvalidRecord},
		{"max timestamp above the records'", func() []byte {
			hh := h
			hh.MaxTimestamp = 2000
			return batchOf(hh, 1, 0, one)
		}(), ErrInvalidRecord},
		{"a record past the max timestamp", withRecords(1, 0, batchtest.Records(kmsg.Record{OffsetDelta: 0, TimestampDelta64: 1})), ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseAndValidate(tt.raw)
			assert.ErrorIs(t, err, tt.want, "%v", err)
		})
	}
}

// rawRecord returns one record, offset delta 0, no key or value, with the
// header count given and then the bytes given, its length computed.
func rawRecord(offsetDelta int64, headers int64, after []byte) []byte {
	body := []byte{0}                             // attributes
	body = binary.AppendVarint(body, 0)           // timestamp delta
	body = binary.AppendVarint(body, offsetDelta) // offset delta
	body = binary.AppendVarint(body, -1)          // no key
	body = binary.AppendVarint(body, -1)          // no value
	body = binary.AppendVarint(body, headers)
	body = append(body, after...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// bomb returns a batch whose one "record" inflates to size zero bytes (a
// whole number of MiB): far past the bound, from a payload of a few
// kilobytes, made of one compressed MiB repeated (gzip members, lz4 and
// zstd frames, each follows the last in a stream).
func bomb(t *testing.T, codec int16, size int) []byte {
	t.Helper()
	zeros := make([]byte, 1<<20)
	var one bytes.Buffer
	switch codec {
	case codecGzip:
		w, _ := gzip.NewWriterLevel(&one, gzip.BestSpeed)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
	case codecLz4:
		w := lz4.NewWriter(&one)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
	case codecZstd:
		w, err := zstd.NewWriter(&one, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
	}
	payload := bytes.Repeat(one.Bytes(), size>>20)
	if codec == codecSnappy {
		// A raw block claims its decoded size up front.
		payload = append(binary.AppendUvarint(nil, uint64(size)), make([]byte, 16)...)
	}
	h := batchtest.Header(1, 1000)
	h.Attributes = codec
	h.Records = payload
	return batchtest.Encode(h)
}

// TestValidateRecordsRefusesBombs: a batch of a few kilobytes inflating to
// 64 MiB (1 GiB claimed, for snappy) is refused, MESSAGE_TOO_LARGE,
// without being inflated: at most about the bound is allocated.
func TestValidateRecordsRefusesBombs(t *testing.T) {
	for name, codec := range map[string]int16{"gzip": codecGzip, "lz4": codecLz4, "zstd": codecZstd, "snappy": codecSnappy} {
		t.Run(name, func(t *testing.T) {
			size := 64 << 20
			if codec == codecSnappy {
				size = 1 << 30
			}
			raw := bomb(t, codec, size)
			require.Less(t, len(raw), 2<<20, "a small batch")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := parseAndValidate(raw)
			runtime.ReadMemStats(&after)
			assert.ErrorIs(t, err, ErrBatchTooLarge, "%v", err)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16*validateBound), "not inflated past the bound")
		})
	}
}

// TestValidateRecordsRefusesS2InSnappy: a block using s2's extensions,
// which Java consumers cannot decode, is not snappy.
func TestValidateRecordsRefusesS2InSnappy(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh12345678"), 4096)
	enc := s2.EncodeBest(nil, data) // uses repeat offsets, not in snappy
	_, strictErr := s2.Decode(nil, enc)
	require.NoError(t, strictErr, "s2 itself decodes it")
	h := batchtest.Header(1, 1000)
	h.Attributes = codecSnappy
	h.Records = enc
	assert.ErrorIs(t, parseAndValidate(batchtest.Encode(h)), ErrCorruptBatch)
}
