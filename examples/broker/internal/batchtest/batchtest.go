// Package batchtest builds v2 record batches with kmsg, for the broker's
// tests: well-formed ones as a client would send them, and, by editing a
// kmsg.RecordBatch before Encode, any malformed one a test needs.
package batchtest

import (
	"bytes"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Records encodes recs as the records section of a batch, each with its
// length; OffsetDelta is left as given.
func Records(recs ...kmsg.Record) []byte {
	var out []byte
	for _, r := range recs {
		r.Length = 0
		body := r.AppendTo(nil)[1:] // a zero length is one varint byte
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

// Encode returns b's bytes with its Length and CRC computed from the rest:
// set any field wrong before calling it and the batch is wrong only there.
func Encode(b kmsg.RecordBatch) []byte {
	b.Length = int32(49 + len(b.Records))
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], castagnoli)
	b.CRC = int32(crc)
	return b.AppendTo(raw[:0])
}

// Header returns the header of a well-formed batch of n records whose
// timestamps are all ts, from no producer (ProducerID -1).
func Header(n int, ts int64) kmsg.RecordBatch {
	return kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(n),
	}
}

// Values returns a batch of records with the given values (no key, no
// header), all timestamped ts, from no producer.
func Values(ts int64, values ...string) []byte {
	b := Header(len(values), ts)
	b.Records = Records(valueRecords(values)...)
	return Encode(b)
}

// Codecs are the compression codecs of a batch's attributes, by name.
var Codecs = map[string]int16{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// Compress returns records compressed with codec (a Codecs value) by
// franz-go's compressor, as a kgo producer compresses a batch (snappy in
// the xerial framing Java's producer writes).
func Compress(codec int16, records []byte) []byte {
	var cc kgo.CompressionCodec
	switch codec {
	case 1:
		cc = kgo.GzipCompression()
	case 2:
		cc = kgo.SnappyCompression()
	case 3:
		cc = kgo.Lz4Compression()
	case 4:
		cc = kgo.ZstdCompression()
	default:
		panic(fmt.Sprintf("batchtest: codec %d", codec))
	}
	comp, err := kgo.DefaultCompressor(cc)
	if err != nil {
		panic(fmt.Sprintf("batchtest: %v", err))
	}
	out, used := comp.Compress(new(bytes.Buffer), records)
	if int16(used) != codec {
		panic(fmt.Sprintf("batchtest: compressed with codec %d, not %d", used, codec))
	}
	return bytes.Clone(out)
}

// CompressedValues returns Values' batch with its records compressed with
// codec.
func CompressedValues(codec int16, ts int64, values ...string) []byte {
	b := Header(len(values), ts)
	b.Attributes = codec
	b.Records = Compress(codec, Records(valueRecords(values)...))
	return Encode(b)
}

// Idempotent returns a batch of values from producer id and epoch whose
// first sequence is seq.
func Idempotent(id int64, epoch int16, seq int32, ts int64, values ...string) []byte {
	b := Header(len(values), ts)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = id, epoch, seq
	b.Records = Records(valueRecords(values)...)
	return Encode(b)
}

// Transactional returns a batch of values from producer id and epoch,
// flagged transactional (attribute bit 4), whose first sequence is seq: a
// transactional producer's batch, or, with seq -1, one a broker's
// coordinator writes for it (a TxnOffsetCommit's).
func Transactional(id int64, epoch int16, seq int32, ts int64, values ...string) []byte {
	b := Header(len(values), ts)
	b.Attributes = attrTransactional
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = id, epoch, seq
	b.Records = Records(valueRecords(values)...)
	return Encode(b)
}

// The attribute bits of a batch that mark it transactional, and control.
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// Marker returns a transaction marker as a broker writes it: a control
// batch of producer id and epoch (transactional, base sequence -1) holding
// one control record, a commit or an abort, whose value names
// coordinatorEpoch; timestamped ts.
func Marker(id int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) []byte {
	typ := kmsg.ControlRecordKeyType(0) // ABORT
	if commit {
		typ = 1 // COMMIT
	}
	key := kmsg.ControlRecordKey{Version: 0, Type: typ}
	value := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}
	b := Header(1, ts)
	b.Attributes = attrTransactional | attrControl
	b.ProducerID, b.ProducerEpoch = id, epoch
	b.Records = Records(kmsg.Record{Key: key.AppendTo(nil), Value: value.AppendTo(nil)})
	return Encode(b)
}

func valueRecords(values []string) []kmsg.Record {
	recs := make([]kmsg.Record, len(values))
	for i, v := range values {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	return recs
}

// Decode returns the records of the uncompressed batches in raw, each with
// its absolute offset, for checking what a fetch returned.
func Decode(raw []byte) ([]Record, error) {
	var out []Record
	for len(raw) > 0 {
		head := kbin.Reader{Src: raw}
		head.Int64()
		n := 12 + int(head.Int32())
		if !head.Ok() || n < 12 || n > len(raw) {
			return out, fmt.Errorf("batchtest: %d bytes left, not a whole batch", len(raw))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil {
			return out, err
		}
		recs := b.Records
		for range b.NumRecords {
			length, used := kbin.Varint(recs)
			end := used + int(length)
			if used == 0 || length < 0 || end > len(recs) {
				return out, fmt.Errorf("batchtest: truncated record at offset %d", b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:end]); err != nil {
				return out, err
			}
			recs = recs[end:]
			out = append(out, Record{Offset: b.FirstOffset + int64(r.OffsetDelta), Key: r.Key, Value: r.Value,
				LeaderEpoch: b.PartitionLeaderEpoch})
		}
		raw = raw[n:]
	}
	return out, nil
}

// Record is a decoded record.
type Record struct {
	Offset      int64
	Key, Value  []byte
	LeaderEpoch int32 // of its batch
}

// At returns a copy of raw, one batch, with its base offset set to base, as
// a log writes it (the checksum does not cover the base offset).
func At(base int64, raw []byte) []byte {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		panic(fmt.Sprintf("batchtest: At: %v", err))
	}
	b.FirstOffset = base
	return b.AppendTo(nil)
}
