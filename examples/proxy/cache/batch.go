package cache

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Header is what the cache needs of a record batch's header.
type Header struct {
	Base int64 // the offset of its first record
	Last int64 // the offset of its last record: Base + last offset delta
	// Transactional is set for a transactional or control batch: whether
	// read_committed may see it depends on the aborted-transaction index.
	Transactional bool
	Size          int // its length in bytes, header included
}

// The v2 batch layout: base offset (8), length (4), then the length's worth
// of bytes, of which the header takes 49 (partition leader epoch, magic,
// crc, attributes, last offset delta, timestamps, producer id and epoch,
// base sequence, record count).
const (
	lengthEnd      = 12 // base offset and length
	minBatchLength = 49 // the rest of a v2 header
	magicPos       = 16
	attrTxn        = 0x10
	attrControl    = 0x20
)

// ParseHeader reads the header of the batch at the start of b. It returns
// ok=false, with no error, when b ends before the batch does: a fetch
// response may end with a partial batch, which is not an error (Kafka cuts
// the last batch at max_bytes in old versions, and clients skip it).
func ParseHeader(b []byte) (h Header, ok bool, err error) {
	if len(b) < lengthEnd {
		return h, false, nil
	}
	rd := kbin.Reader{Src: b[:lengthEnd]}
	rd.Int64() // the base offset, read again with the whole header below
	length := rd.Int32()
	if length < minBatchLength {
		return h, false, fmt.Errorf("%w: batch length %d", ErrCorruptBatch, length)
	}
	size := lengthEnd + int(length)
	if len(b) < size {
		return h, false, nil
	}
	if magic := int8(b[magicPos]); magic != 2 {
		return h, false, fmt.Errorf("%w: magic %d", ErrMessageFormat, magic)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b[:size]); err != nil {
		return h, false, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	if rb.LastOffsetDelta < 0 {
		return h, false, fmt.Errorf("%w: last offset delta %d", ErrCorruptBatch, rb.LastOffsetDelta)
	}
	return Header{
		Base:          rb.FirstOffset,
		Last:          rb.FirstOffset + int64(rb.LastOffsetDelta),
		Transactional: rb.Attributes&(attrTxn|attrControl) != 0,
		Size:          size,
	}, true, nil
}

// Split calls fn with the header of each whole batch of records, in order,
// and returns the bytes they take; a partial batch at the end is left out.
// Each batch must start after the one before it ends. O(batches).
func Split(records []byte, fn func(Header)) (int, error) {
	pos, next := 0, int64(-1)
	for pos < len(records) {
		h, ok, err := ParseHeader(records[pos:])
		if err != nil {
			return pos, fmt.Errorf("at byte %d: %w", pos, err)
		}
		if !ok {
			break
		}
		if h.Base < next {
			return pos, fmt.Errorf("%w: at byte %d, base offset %d inside the batch before, which ends at %d", ErrCorruptBatch, pos, h.Base, next-1)
		}
		fn(h)
		pos += h.Size
		next = h.Last + 1
	}
	return pos, nil
}

// Trim returns the whole batches at the start of records that fit in max
// bytes, or, with minOne, the first batch whatever its size, as Kafka
// answers a fetch: the response's max_bytes is shared by its partitions,
// and the first batch of the first partition with data is returned even
// when it alone is larger, so that a consumer always progresses.
func Trim(records []byte, max int, minOne bool) []byte {
	n := 0
	for n < len(records) {
		h, ok, err := ParseHeader(records[n:])
		if err != nil || !ok {
			break // upstream's bytes as they are: the client judges them
		}
		if n+h.Size > max && (n > 0 || !minOne) {
			break
		}
		n += h.Size
	}
	if n == 0 && len(records) > 0 && minOne {
		return records // not parseable here: pass it on untouched
	}
	return records[:n]
}
