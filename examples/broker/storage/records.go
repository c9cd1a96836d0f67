package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Records are validated as Kafka's LogValidator validates a client's
// batch before appending it: the records are walked one by one, read as
// Kafka's DefaultRecord reads them, decompressed as they are read if they
// are compressed (keys and values skipped, never kept, as Kafka's
// skipKeyValueIterator does), and the batch is refused if anything
// disagrees with its header. ParseBatch checks the header alone; a batch
// whose header tells the truth about records that are not there, or not
// as many, or not decodable, would be stored and served, and consumers
// would loop on it (a payload that does not decompress) or skip offsets
// that hold nothing (a count of 1,000 over one record). The bytes are not
// changed: a valid batch is stored as sent.
//
// The checks, with what Kafka answers:
//
//   - the payload decompresses with the codec the attributes name, to
//     its end (CORRUPT_MESSAGE; Kafka fails with an I/O error), and to at
//     most the store's inflate limit, by default the largest request the
//     broker reads (MESSAGE_TOO_LARGE: a Java producer then splits its
//     batch). Kafka sets no such bound, which lets a 1 MB batch make it
//     inflate a gigabyte; a legitimate batch of 1 MB of compressed zeros
//     inflating past 100 MiB is not a loss;
//   - exactly the batch's record count of records, and nothing after the
//     last (INVALID_RECORD, Kafka's "Incorrect declared batch size");
//   - each record whole: its length covers exactly its fields, a key and a
//     value that fit, a header count and header keys that are not
//     negative, varints of at most five bytes (ten for the timestamp)
//     (INVALID_RECORD, as in Kafka's DefaultRecord);
//   - offset deltas 0, 1, 2... in order (INVALID_RECORD). Kafka rewrites a
//     compressed batch whose inner offsets are off, for old clients, and
//     ignores them uncompressed; this broker stores batches as sent, so a
//     record would be served at the offset it claims: it refuses instead;
//   - with CreateTime, a max timestamp equal to the largest of the
//     records' (INVALID_RECORD). Kafka rewrites the header's; here the
//     header is what retention and ListOffsets by time read.

// validateRecords checks b's records as the doc above says, bound being
// the most bytes they may decompress to. Uncompressed records are walked
// in place; compressed ones as they are inflated, through a few pooled
// buffers (see window). O(records + inflated bytes).
func validateRecords(b *Batch, bound int) error {
	records := b.raw[batchOverhead:]
	codec := int(b.attrs & attrCompression)
	if codec == codecNone {
		w := window{b: records}
		return walkRecords(&w, b)
	}
	in := inflaters.Get().(*inflater)
	defer in.release()
	w, err := in.open(records, codec, bound)
	if err == nil {
		err = walkRecords(w, b)
	}
	switch {
	case err == nil:
		return nil
	case in.exceeded() || errors.Is(err, errInflatedTooLarge):
		return fmt.Errorf("%w: its records decompress past %d bytes", ErrBatchTooLarge, bound)
	case errors.Is(err, ErrInvalidRecord):
		return err
	default:
		return fmt.Errorf("%w: its records do not decompress with codec %d: %v", ErrCorruptBatch, codec, err)
	}
}

// errShort is why a record read stops: its bytes ran out.
var errShort = errors.New("cut short")

// maxVarint32 is the most bytes of a varint of an int32 field.
const maxVarint32 = 5

// walkRecords reads every record of w as Kafka's DefaultRecord reads it
// (see the doc above), then makes sure nothing follows the last: for a
// stream, up to its end, checksum included. A read that fails for another
// reason than the bytes running out (a decompression error) is returned
// as it is.
func walkRecords(w *window, b *Batch) error {
	maxTS := int64(math.MinInt64)
	for i := int32(0); i < b.numRecords; i++ {
		ts, delta, err := w.record(i, b.numRecords)
		if err != nil {
			return err
		}
		if delta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, delta)
		}
		maxTS = max(maxTS, b.firstTimestamp+ts)
	}
	switch {
	case w.src == nil && len(w.b) > 0:
		return fmt.Errorf("%w: %d bytes after the %d records declared", ErrInvalidRecord, len(w.b), b.numRecords)
	case w.more():
		// Kafka's "records still remaining".
		return fmt.Errorf("%w: bytes after the %d records declared", ErrInvalidRecord, b.numRecords)
	case !errors.Is(w.endErr(), io.EOF):
		return w.endErr() // the stream's end does not check out
	}
	if b.attrs&attrLogAppendTime == 0 && maxTS != b.info.MaxTimestamp {
		return fmt.Errorf("%w: max timestamp %d, but its records' largest is %d", ErrInvalidRecord, b.info.MaxTimestamp, maxTS)
	}
	return nil
}

// record reads record i of n and returns its timestamp and offset
// deltas: in place when the chunk holds it whole (parseRecord), otherwise
// a byte at a time across chunks (streamRecord). Both make the same
// checks and report the same errors.
func (w *window) record(i, n int32) (tsDelta int64, offsetDelta int32, err error) {
	if len(w.b) == 0 {
		w.more() // a stream's first chunk, or its next
	}
	if len(w.b) >= maxVarint32 {
		length, k := varintAt(w.b, 0, maxVarint32)
		switch {
		case k < 0 || length != int64(int32(length)):
			return 0, 0, recordError(i, varint32Error(k, length))
		case length < 0:
			return 0, 0, fmt.Errorf("%w: record %d has a length of %d", ErrInvalidRecord, i, length)
		}
		if rest := w.b[k:]; length <= int64(len(rest)) {
			ts, delta, used, err := parseRecord(rest[:length])
			if err != nil {
				return 0, 0, recordError(i, err)
			}
			if used < int(length) {
				return 0, 0, fmt.Errorf("%w: record %d: %d bytes past its fields, within its length", ErrInvalidRecord, i, int(length)-used)
			}
			w.b = rest[length:]
			return ts, delta, nil
		}
	}
	return w.streamRecord(i, n)
}

// streamRecord reads record i of n a byte at a time, its length first.
func (w *window) streamRecord(i, n int32) (tsDelta int64, offsetDelta int32, err error) {
	rw := recordWalker{src: w}
	length, err := rw.varint32()
	switch {
	case errors.Is(err, io.EOF) && rw.read == 0:
		return 0, 0, fmt.Errorf("%w: %d records declared, %d found", ErrInvalidRecord, n, i)
	case err != nil:
		return 0, 0, recordError(i, err)
	case length < 0:
		return 0, 0, fmt.Errorf("%w: record %d has a length of %d", ErrInvalidRecord, i, length)
	}
	rw.bounded, rw.left = true, int64(length)
	if tsDelta, offsetDelta, err = rw.record(); err != nil {
		return 0, 0, recordError(i, err)
	}
	if rw.left > 0 {
		return 0, 0, fmt.Errorf("%w: record %d: %d bytes past its fields, within its length", ErrInvalidRecord, i, rw.left)
	}
	return tsDelta, offsetDelta, nil
}

// recordError returns err, reading record i, as walkRecords reports it: a
// record that runs past the bytes, or its length, is INVALID_RECORD;
// anything else (a decompression error) is returned as it is.
func recordError(i int32, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errShort) {
		return fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, errShort)
	}
	if errors.Is(err, ErrInvalidRecord) {
		return fmt.Errorf("record %d: %w", i, err)
	}
	return err
}

// parseRecord reads a record's fields from rec, exactly its length's
// bytes, as recordWalker.record reads them from a stream, and returns its
// timestamp and offset deltas and how many bytes its fields take. The
// same checks in the same order, on a slice: errShort when a field runs
// past rec. Errors are made off the main path: a valid record costs its
// varints, most of them one byte, decoded inline.
func parseRecord(rec []byte) (tsDelta int64, offsetDelta int32, used int, err error) {
	if len(rec) == 0 { // attributes, unused
		return 0, 0, 0, errShort
	}
	ts, p := varintAt(rec, 1, 10)
	if p < 0 {
		return 0, 0, 0, varintError(p, 10)
	}
	delta, p := varintAt(rec, p, maxVarint32)
	if p < 0 || delta != int64(int32(delta)) {
		return 0, 0, 0, varint32Error(p, delta)
	}
	for range 2 { // key, value: a negative length is a null
		if p, err = skipBytesAt(rec, p, false); err != nil {
			return 0, 0, 0, err
		}
	}
	headers, p := varintAt(rec, p, maxVarint32)
	switch {
	case p < 0 || headers != int64(int32(headers)):
		return 0, 0, 0, varint32Error(p, headers)
	case headers < 0:
		return 0, 0, 0, fmt.Errorf("%w: a header count of %d", ErrInvalidRecord, headers)
	}
	for range headers {
		if p, err = skipBytesAt(rec, p, true); err != nil { // the key
			return 0, 0, 0, err
		}
		if p, err = skipBytesAt(rec, p, false); err != nil { // the value
			return 0, 0, 0, err
		}
	}
	return ts, int32(delta), p, nil
}

// The ends varintAt returns when it reads no varint.
const (
	varintShort   = -1 // the bytes end first
	varintTooLong = -2 // more than max bytes
)

// varintAt reads the zigzag varint of at most max bytes at b[p:], as
// recordWalker.varint does, and returns it and where it ends, or an end
// below zero (varintShort, varintTooLong). Small enough to be inlined.
func varintAt(b []byte, p, max int) (int64, int) {
	var x uint64
	for i := range max {
		if p+i >= len(b) {
			return 0, varintShort
		}
		c := b[p+i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), p + i + 1
		}
	}
	return 0, varintTooLong
}

// varintError returns why varintAt, reading at most max bytes, read
// nothing (end below zero).
func varintError(end, max int) error {
	if end == varintShort {
		return errShort
	}
	return fmt.Errorf("%w: a varint longer than %d bytes", ErrInvalidRecord, max)
}

// varint32Error returns why varintAt, reading an int32 field, failed:
// it read nothing (end below zero), or v, out of an int32's range.
func varint32Error(end int, v int64) error {
	if end < 0 {
		return varintError(end, maxVarint32)
	}
	return fmt.Errorf("%w: a varint of %d for a 32-bit field", ErrInvalidRecord, v)
}

// skipBytesAt skips the varint-length byte string at b[p:] and returns
// where it ends; a negative length is a null, refused for a header's key.
func skipBytesAt(b []byte, p int, header bool) (int, error) {
	n, p := varintAt(b, p, maxVarint32)
	switch {
	case p < 0 || n != int64(int32(n)):
		return 0, varint32Error(p, n)
	case n < 0 && header:
		return 0, fmt.Errorf("%w: a header key of %d bytes", ErrInvalidRecord, n)
	case n < 0:
		return p, nil
	case n > int64(len(b)-p):
		return 0, errShort
	}
	return p + int(n), nil
}

// recordWalker reads one record from src: its length, then its fields
// within it.
type recordWalker struct {
	src     *window
	read    int64 // bytes read
	bounded bool  // the length is read: the fields must fit in left
	left    int64 // bytes of the record not yet read
}

// record reads a record's fields after its length, and returns its
// timestamp and offset deltas.
func (w *recordWalker) record() (tsDelta int64, offsetDelta int32, err error) {
	if _, err = w.byte(); err != nil { // attributes, unused
		return 0, 0, err
	}
	if tsDelta, err = w.varint(10); err != nil {
		return 0, 0, err
	}
	if offsetDelta, err = w.varint32(); err != nil {
		return 0, 0, err
	}
	for range 2 { // key, value: a negative length is a null
		if err = w.skipBytes(false); err != nil {
			return 0, 0, err
		}
	}
	headers, err := w.varint32()
	if err != nil {
		return 0, 0, err
	}
	if headers < 0 {
		return 0, 0, fmt.Errorf("%w: a header count of %d", ErrInvalidRecord, headers)
	}
	for range headers {
		if err = w.skipBytes(true); err != nil { // the key
			return 0, 0, err
		}
		if err = w.skipBytes(false); err != nil { // the value
			return 0, 0, err
		}
	}
	return tsDelta, offsetDelta, nil
}

// byte reads one byte of the record.
func (w *recordWalker) byte() (byte, error) {
	if w.bounded {
		if w.left <= 0 {
			return 0, errShort
		}
		w.left--
	}
	c, err := w.src.ReadByte()
	if err == nil {
		w.read++
	}
	return c, err
}

// varint reads a zigzag varint of at most max bytes, as Kafka's
// ByteUtils.readVarint and readVarlong do.
func (w *recordWalker) varint(max int) (int64, error) {
	var x uint64
	for i := range max {
		c, err := w.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), nil
		}
	}
	return 0, fmt.Errorf("%w: a varint longer than %d bytes", ErrInvalidRecord, max)
}

// varint32 reads a varint of an int32 field.
func (w *recordWalker) varint32() (int32, error) {
	v, err := w.varint(5)
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		err = fmt.Errorf("%w: a varint of %d for a 32-bit field", ErrInvalidRecord, v)
	}
	return int32(v), err
}

// skipBytes skips a varint-length byte string; a negative length is a
// null, refused for a header's key.
func (w *recordWalker) skipBytes(header bool) error {
	n, err := w.varint32()
	if err != nil {
		return err
	}
	if n < 0 {
		if header {
			return fmt.Errorf("%w: a header key of %d bytes", ErrInvalidRecord, n)
		}
		return nil
	}
	if int64(n) > w.left {
		return errShort
	}
	skipped, err := w.src.Discard(int(n))
	w.left -= int64(skipped)
	w.read += int64(skipped)
	if err != nil {
		return err
	}
	return nil
}
