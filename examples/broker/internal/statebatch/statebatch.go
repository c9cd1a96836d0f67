// Package statebatch encodes and reads the record batches the broker's
// coordinators write to their state topics (__consumer_offsets by package
// group/records, __transaction_state by package txn, __share_group_state
// by package sharestate): uncompressed v2 batches of kmsg records, a
// coordinator's own or a transactional producer's (a TxnOffsetCommit's),
// and, read back, the control batches of transaction markers among them;
// and the replay of a topic whose records hold their key's whole value
// (Latest).
package statebatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Attributes of a batch a coordinator reads back.
const (
	AttrTransactional = 0x10
	AttrControl       = 0x20
	attrCompression   = 0x07
)

// ErrMalformed is wrapped by Walk's errors: a batch or a record that does
// not read.
var ErrMalformed = errors.New("a malformed state batch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns recs as one uncompressed v2 batch with attributes attrs,
// timestamped now, their offset deltas 0, 1, 2..., and the producer id and
// epoch given (-1 and -1 for a coordinator's own records), with no
// sequence (-1: a coordinator's appends are not a producer's retries).
// Its base offset is 0 until the log places it. O(len of the records):
// each record is encoded twice (once to measure its length) and the
// batch twice (once to checksum it), the measures in one scratch buffer
// and the batch in one allocation, as every coordinator write goes
// through here.
func Encode(now time.Time, attrs int16, producerID int64, producerEpoch int16, recs []kmsg.Record) []byte {
	var body, scratch []byte
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.Length = 0
		scratch = r.AppendTo(scratch[:0])
		r.Length = int32(len(scratch) - 1) // the zero length took one varint byte
		body = r.AppendTo(body)
	}
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: producerID, ProducerEpoch: producerEpoch, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body}
	b.Length = int32(49 + len(body)) // the header after the length field, then the records
	raw := b.AppendTo(make([]byte, 0, 12+int(b.Length)))
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli)) // attributes to the end
	return b.AppendTo(raw[:0])
}

// Walk calls fn for each record of raw, whole batches as a partition's
// Read returns them, concatenated, with its batch, and returns the offset
// after the last batch walked whole (next, if none). A batch or record
// that does not read, or a compressed batch (a coordinator writes none),
// stops it with an error wrapping ErrMalformed; fn's error stops it too,
// as it is. O(records).
func Walk(raw []byte, next int64, fn func(b *kmsg.RecordBatch, rec *kmsg.Record) error) (int64, error) {
	for len(raw) > 0 {
		if len(raw) < 12 {
			return next, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrMalformed, len(raw))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size < 12+49 || size > len(raw) {
			return next, fmt.Errorf("%w: a batch of %d bytes, %d left", ErrMalformed, size, len(raw))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return next, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if b.Attributes&attrCompression != 0 {
			return next, fmt.Errorf("%w: a compressed batch", ErrMalformed)
		}
		rest := b.Records
		for range b.NumRecords {
			length, n := kbin.Varint(rest)
			end := n + int(length)
			if n == 0 || length < 0 || end > len(rest) {
				return next, fmt.Errorf("%w: a record cut short", ErrMalformed)
			}
			var rec kmsg.Record
			if err := rec.ReadFrom(rest[:end]); err != nil {
				return next, fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			if err := fn(&b, &rec); err != nil {
				return next, err
			}
			rest = rest[end:]
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		raw = raw[size:]
	}
	return next, nil
}
