package storage

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Records are validated as Kafka's LogValidator validates a client's
// batch before appending it: the records are decompressed (within a
// bound) and walked, each read as Kafka's DefaultRecord reads it, and the
// batch is refused if anything disagrees with its header. ParseBatch
// checks the header alone; a batch whose header tells the truth about
// records that are not there, or not as many, or not decodable, would be
// stored and served, and consumers would loop on it (a payload that does
// not decompress) or skip offsets that hold nothing (a count of 1,000 over
// one record). The bytes are not changed: a valid batch is stored as sent.
//
// The checks, with what Kafka answers:
//
//   - the payload decompresses with the codec the attributes name
//     (CORRUPT_MESSAGE; Kafka fails with an I/O error), to at most the
//     topic's max.message.bytes (MESSAGE_TOO_LARGE: a Java producer then
//     splits its batch; Kafka sets no such bound, which lets a 1 MB batch
//     inflate to a GB);
//   - exactly the batch's record count of records, and nothing after the
//     last (INVALID_RECORD, Kafka's "Incorrect declared batch size");
//   - each record whole: its length covers exactly its fields, a key and a
//     value that fit, a header count and header keys that are not
//     negative (INVALID_RECORD, as in Kafka's DefaultRecord);
//   - offset deltas 0, 1, 2... in order (INVALID_RECORD). Kafka rewrites a
//     compressed batch whose inner offsets are off, for old clients, and
//     ignores them uncompressed; this broker stores batches as sent, so a
//     record would be served at the offset it claims: it refuses instead;
//   - with CreateTime, a max timestamp equal to the largest of the
//     records' (INVALID_RECORD). Kafka rewrites the header's; here the
//     header is what retention and ListOffsets by time read.

// validateRecords checks b's records as the doc above says, bound being
// the most bytes they may decompress to. Compressed records are inflated
// into a pooled buffer; uncompressed ones are walked in place.
// O(records + inflated bytes).
func validateRecords(b *Batch, bound int) error {
	codec := int(b.attrs & attrCompression)
	records := b.raw[batchOverhead:]
	if codec != codecNone {
		bufp := inflateBuffers.Get().(*[]byte)
		defer func() {
			if cap(*bufp) <= maxPooledInflate {
				inflateBuffers.Put(bufp)
			}
		}()
		out, err := inflate((*bufp)[:0], records, codec, bound)
		*bufp = out
		switch {
		case errors.Is(err, errInflatedTooLarge):
			return fmt.Errorf("%w: its records %v (max.message.bytes)", ErrBatchTooLarge, err)
		case err != nil:
			return fmt.Errorf("%w: its records do not decompress with codec %d: %v", ErrCorruptBatch, codec, err)
		}
		records = out
	}
	return walkRecords(records, b)
}

// walkRecords reads every record of records as Kafka's DefaultRecord
// reads it (see the doc above).
func walkRecords(records []byte, b *Batch) error {
	rd := kbin.Reader{Src: records}
	maxTS := int64(math.MinInt64)
	for i := int32(0); i < b.numRecords; i++ {
		if len(rd.Src) == 0 {
			return fmt.Errorf("%w: %d records declared, %d found", ErrInvalidRecord, b.numRecords, i)
		}
		length := rd.Varint()
		if !rd.Ok() || length < 0 || int(length) > len(rd.Src) {
			return fmt.Errorf("%w: record %d: a length of %d with %d bytes left", ErrInvalidRecord, i, length, len(rd.Src))
		}
		body := kbin.Reader{Src: rd.Span(int(length))}
		ts, delta, err := readRecord(&body)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, err)
		}
		if delta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, delta)
		}
		maxTS = max(maxTS, b.firstTimestamp+ts)
	}
	if len(rd.Src) > 0 {
		return fmt.Errorf("%w: %d bytes after the %d records declared", ErrInvalidRecord, len(rd.Src), b.numRecords)
	}
	if b.attrs&attrLogAppendTime == 0 && maxTS != b.info.MaxTimestamp {
		return fmt.Errorf("%w: max timestamp %d, but its records' largest is %d", ErrInvalidRecord, b.info.MaxTimestamp, maxTS)
	}
	return nil
}

// readRecord reads one record's fields, after its length, from body,
// which must hold exactly them, and returns its timestamp and offset
// deltas.
func readRecord(body *kbin.Reader) (tsDelta int64, offsetDelta int32, err error) {
	body.Int8() // attributes, unused
	tsDelta = body.Varlong()
	offsetDelta = body.Varint()
	skipVarintBytes(body) // key
	skipVarintBytes(body) // value
	headers := body.Varint()
	if !body.Ok() {
		return 0, 0, errors.New("cut short")
	}
	if headers < 0 {
		return 0, 0, fmt.Errorf("a header count of %d", headers)
	}
	for h := int32(0); h < headers; h++ {
		if n := body.Varint(); n < 0 {
			return 0, 0, fmt.Errorf("header %d has a key of %d bytes", h, n)
		} else {
			body.Span(int(n))
		}
		skipVarintBytes(body) // value
		if !body.Ok() {
			return 0, 0, fmt.Errorf("header %d cut short", h)
		}
	}
	if len(body.Src) > 0 {
		return 0, 0, fmt.Errorf("%d bytes past its fields, within its length", len(body.Src))
	}
	return tsDelta, offsetDelta, nil
}

// skipVarintBytes skips a varint-length byte string; a negative length is
// a null, as Kafka reads a key or a value.
func skipVarintBytes(rd *kbin.Reader) {
	if n := rd.Varint(); n > 0 {
		rd.Span(int(n))
	}
}

// Inflated records are decoded into pooled buffers; one grown past
// maxPooledInflate by a large batch is left to the collector.
var inflateBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxPooledInflate = 4 << 20
