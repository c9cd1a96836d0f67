package storage

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reading and rewriting one batch for the log cleaner (cleaner.go), as
// Kafka's MemoryRecords.filterTo does.
//
// A batch is decoded whole, its records decompressed if they are
// (franz-go's decompressor), and each record kept or dropped. A batch
// that loses none is kept as it is, its bytes untouched. One that loses
// some is encoded again with kmsg: the same header (base offset,
// producer id, epoch and first sequence, leader epoch, attributes, and
// the last offset delta, which Kafka keeps too, so that a consumer steps
// over a batch whose last records went: KAFKA-5443), the records kept with
// their offset and timestamp deltas, compressed again with the batch's own
// codec, as Kafka re-compresses with it. A batch that loses all its
// records goes, unless it is the last batch of a producer whose sequences
// the partition remembers: that one stays empty, as Kafka's cleaner keeps
// it (BatchRetention.RETAIN_EMPTY), so that a restart rebuilds the
// producer's last sequence from it.
//
// The delete horizon (KIP-534): the first time a batch holding a
// tombstone (a record with a null value) is cleaned, the cleaner writes
// when its tombstones may go, now plus delete.retention.ms, in the
// batch's base timestamp and sets attribute bit 6, the records'
// timestamp deltas made relative to it so that their timestamps read the
// same; a later cleaning past that time drops the tombstones. The horizon
// is in the batch, so a restart keeps it.

// attrDeleteHorizon is the attribute bit saying the base timestamp is the
// batch's delete horizon (KIP-534).
const attrDeleteHorizon = 0x40

// decodedBatch is a batch the cleaner reads: its header, and its records
// unless it is a control batch, which the cleaner keeps whole (see
// cleaner.go).
type decodedBatch struct {
	raw  []byte
	info BatchInfo
	kb   kmsg.RecordBatch
	recs []kmsg.Record
}

// horizon returns the batch's delete horizon, and whether it has one.
func (d *decodedBatch) horizon() (int64, bool) {
	return d.kb.FirstTimestamp, d.kb.Attributes&attrDeleteHorizon != 0
}

// whole reports whether the cleaner keeps the batch as it is, without
// looking at its records: a control batch (a transaction marker).
func (d *decodedBatch) whole() bool { return d.info.Control != ControlNone }

// decompressor is franz-go's, shared: it pools its decoders.
var decompressor = kgo.DefaultDecompressor()

// decodeBatch decodes raw, one whole batch of a log, its records too
// unless the cleaner keeps it whole.
func decodeBatch(raw []byte) (*decodedBatch, error) {
	info, err := ReadBatchHeader(raw)
	if err != nil {
		return nil, err
	}
	d := &decodedBatch{raw: raw, info: info}
	if err := d.kb.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	if d.whole() {
		return d, nil
	}
	d.recs, err = decodeRecords(&d.kb)
	return d, err
}

// decodeRecords returns the records of kb, decompressed if they are.
func decodeRecords(kb *kmsg.RecordBatch) ([]kmsg.Record, error) {
	records := kb.Records
	if codec := kb.Attributes & attrCompression; codec != codecNone {
		var err error
		if records, err = decompressor.Decompress(records, kgo.CompressionCodecType(codec)); err != nil {
			return nil, fmt.Errorf("%w: its records do not decompress with codec %d: %v", ErrCorruptBatch, codec, err)
		}
	}
	recs := make([]kmsg.Record, 0, kb.NumRecords)
	for len(records) > 0 {
		length, used := kbin.Varint(records)
		end := used + int(length)
		if used == 0 || length < 0 || end > len(records) {
			return nil, fmt.Errorf("%w: a record cut short", ErrCorruptBatch)
		}
		var r kmsg.Record
		if err := r.ReadFrom(records[:end]); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
		}
		recs = append(recs, r)
		records = records[end:]
	}
	if len(recs) != int(kb.NumRecords) {
		return nil, fmt.Errorf("%w: %d records where %d are declared", ErrCorruptBatch, len(recs), kb.NumRecords)
	}
	return recs, nil
}

// requireKeys refuses b, a client's batch for a compacted topic, if a
// record of it has no key: the cleaner could never compact it away
// (Kafka's LogValidator: "Compacted topic cannot accept message without
// key"). The records were validated already; this decodes them once more,
// a cost only compacted topics pay.
func requireKeys(b *Batch) error {
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b.raw); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	recs, err := decodeRecords(&kb)
	if err != nil {
		return err
	}
	for i := range recs {
		if recs[i].Key == nil {
			return fmt.Errorf("%w: Compacted topic cannot accept message without key", ErrInvalidRecord)
		}
	}
	return nil
}

// compressors are franz-go's, one per codec, made on first use; zstd's
// is klauspost's encoder itself, one for the process (franz-go's made an
// encoder, a few MiB, per batch here: most of a pass's time).
var compressors struct {
	once  sync.Once
	byTyp map[int16]kgo.Compressor
	zstd  *zstd.Encoder
}

// compressorFor returns the compressor of codec, or nil if none is made.
func compressorFor(codec int16) kgo.Compressor {
	compressors.once.Do(func() {
		compressors.byTyp = make(map[int16]kgo.Compressor)
		for typ, cc := range map[int16]kgo.CompressionCodec{codecGzip: kgo.GzipCompression(),
			codecSnappy: kgo.SnappyCompression(), codecLz4: kgo.Lz4Compression(), codecZstd: kgo.ZstdCompression()} {
			if c, err := kgo.DefaultCompressor(cc); err == nil {
				compressors.byTyp[typ] = c
			}
		}
		// EncodeAll is safe for concurrent use; one encoder at a
		// time, as passes are one at a time.
		compressors.zstd, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return compressors.byTyp[codec]
}

// compress returns body compressed with codec, and false if it could not
// be (no compressor, or the output would not be smaller).
func compress(codec int16, body []byte) ([]byte, bool) {
	c := compressorFor(codec)
	if codec == codecZstd && compressors.zstd != nil {
		return compressors.zstd.EncodeAll(body, nil), true
	}
	if c == nil {
		return nil, false
	}
	out, used := c.Compress(new(bytes.Buffer), body)
	if int16(used) != codec {
		return nil, false
	}
	return bytes.Clone(out), true
}

// rewrite encodes d again holding only recs, a subsequence of its records
// (see the file's doc); horizon, when set (>= 0), becomes its delete
// horizon. The result is a stored batch, parsed back: its checksum is
// computed here, and checked.
func (d *decodedBatch) rewrite(recs []kmsg.Record, horizon int64) (*Batch, error) {
	kb := d.kb
	base := kb.FirstTimestamp
	if horizon >= 0 {
		base = horizon
		kb.Attributes |= attrDeleteHorizon
	}
	var body []byte
	for _, r := range recs {
		ts := d.kb.FirstTimestamp + r.TimestampDelta64
		r.TimestampDelta64, r.TimestampDelta = ts-base, 0
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero length is one byte
		body = r.AppendTo(body)
	}
	kb.FirstTimestamp = base
	kb.NumRecords = int32(len(recs))
	if len(recs) == 0 {
		kb.Attributes &^= attrCompression // an empty batch, as Kafka writes one
	}
	if codec := kb.Attributes & attrCompression; codec != codecNone && len(body) > 0 {
		if out, ok := compress(codec, body); ok {
			body = out
		} else {
			// The compressor gave up on it (say, it grew): written
			// uncompressed, as the attributes then say.
			kb.Attributes &^= attrCompression
		}
	}
	kb.Records = body
	kb.Length = int32(batchOverhead - lengthOverhead + len(body))
	raw := kb.AppendTo(nil)
	kb.CRC = int32(crc32.Checksum(raw[crcCoversFrom:], castagnoli))
	return ParseStoredBatch(kb.AppendTo(raw[:0]))
}
