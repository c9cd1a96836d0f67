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
// buffers. O(records + inflated bytes).
func validateRecords(b *Batch, bound int) error {
	records := b.raw[batchOverhead:]
	codec := int(b.attrs & attrCompression)
	if codec == codecNone {
		src := sliceSource{b: records}
		return walkRecords(&src, b)
	}
	in := inflaters.Get().(*inflater)
	defer in.release()
	r, err := in.open(records, codec, bound)
	if err == nil {
		err = walkRecords(r, b)
		if err == nil {
			// The stream's end: its checksum, and nothing after the
			// records (Kafka's "records still remaining").
			var n int
			n, err = r.Discard(1)
			switch {
			case n > 0:
				err = fmt.Errorf("%w: bytes after the %d records declared", ErrInvalidRecord, b.numRecords)
			case errors.Is(err, io.EOF):
				err = nil
			}
		}
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

// A recordSource is what records are read from: the batch's bytes
// (sliceSource), or a decompressing stream (a bufio.Reader).
type recordSource interface {
	io.ByteReader
	// Discard skips n bytes, and returns how many it skipped.
	Discard(n int) (int, error)
}

// errShort is why a record read stops: its bytes ran out.
var errShort = errors.New("cut short")

// walkRecords reads every record of src as Kafka's DefaultRecord reads it
// (see the doc above). A read that fails for another reason than the
// bytes running out (a decompression error) is returned as it is.
func walkRecords(src recordSource, b *Batch) error {
	maxTS := int64(math.MinInt64)
	for i := int32(0); i < b.numRecords; i++ {
		w := recordWalker{src: src}
		length, err := w.varint32()
		switch {
		case errors.Is(err, io.EOF) && w.read == 0:
			return fmt.Errorf("%w: %d records declared, %d found", ErrInvalidRecord, b.numRecords, i)
		case err != nil:
			return w.fail(i, err)
		case length < 0:
			return fmt.Errorf("%w: record %d has a length of %d", ErrInvalidRecord, i, length)
		}
		w.bounded, w.left = true, int64(length)
		ts, delta, err := w.record()
		if err != nil {
			return w.fail(i, err)
		}
		if w.left > 0 {
			return fmt.Errorf("%w: record %d: %d bytes past its fields, within its length", ErrInvalidRecord, i, w.left)
		}
		if delta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, delta)
		}
		maxTS = max(maxTS, b.firstTimestamp+ts)
	}
	if src, ok := src.(*sliceSource); ok && len(src.b) > 0 {
		return fmt.Errorf("%w: %d bytes after the %d records declared", ErrInvalidRecord, len(src.b), b.numRecords)
	}
	if b.attrs&attrLogAppendTime == 0 && maxTS != b.info.MaxTimestamp {
		return fmt.Errorf("%w: max timestamp %d, but its records' largest is %d", ErrInvalidRecord, b.info.MaxTimestamp, maxTS)
	}
	return nil
}

// recordWalker reads one record from src: its length, then its fields
// within it.
type recordWalker struct {
	src     recordSource
	read    int64 // bytes read
	bounded bool  // the length is read: the fields must fit in left
	left    int64 // bytes of the record not yet read
}

// fail returns err, reading record i, as walkRecords reports it: a
// record that runs past the bytes, or its length, is INVALID_RECORD;
// anything else (a decompression error) is returned as it is.
func (w *recordWalker) fail(i int32, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errShort) {
		return fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, errShort)
	}
	if errors.Is(err, ErrInvalidRecord) {
		return fmt.Errorf("record %d: %w", i, err)
	}
	return err
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

// sliceSource reads records in place from a batch's bytes.
type sliceSource struct{ b []byte }

func (s *sliceSource) ReadByte() (byte, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c, nil
}

func (s *sliceSource) Discard(n int) (int, error) {
	if n > len(s.b) {
		k := len(s.b)
		s.b = s.b[k:]
		return k, io.EOF
	}
	s.b = s.b[n:]
	return n, nil
}
