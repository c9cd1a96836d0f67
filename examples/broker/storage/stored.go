package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file reads batches back from where a log keeps them: a durable log
// recovering its files, or a follower taking its leader's batches as they
// are (parseFetched). Such a batch already carries its offsets.

// BatchHeaderSize is the size of a v2 record batch's header, the records
// excluded: what ReadBatchHeader decodes.
const BatchHeaderSize = batchOverhead

// maxStoredBatch bounds the size of a batch read back from a log: the
// largest a topic's max.message.bytes allows.
const maxStoredBatch = 1<<31 - 1

// ReadBatchHeader decodes the header of a batch read back from a log, in
// the first BatchHeaderSize bytes of h: its info, with the offsets the log
// gave it and AppendTime left to the caller. It checks what a header alone
// can (a length of at least a header, the magic, a record count that
// agrees with the last offset delta, or is below it in a batch the log
// cleaner rewrote, a base offset that is not negative)
// and returns an error wrapping ErrCorruptBatch otherwise; the checksum
// needs the whole batch, which ParseStoredBatch checks.
//
// A control batch's type is in its record, after the header: it is read
// (with a marker's coordinator epoch) when h holds that record whole, as
// it does when h is the whole batch, and is ControlUnread otherwise; a
// compressed control batch, or one whose record does not decode, is
// ErrCorruptBatch then. O(1).
func ReadBatchHeader(h []byte) (BatchInfo, error) {
	if len(h) < batchOverhead {
		return BatchInfo{}, fmt.Errorf("%w: %d bytes, shorter than a batch header (%d)", ErrCorruptBatch, len(h), batchOverhead)
	}
	// kmsg decodes whole batches: give it a copy of the header whose
	// length says that no records follow, and take the true length from
	// the original.
	var hdr [batchOverhead]byte
	copy(hdr[:], h)
	length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
	binary.BigEndian.PutUint32(hdr[8:12], batchOverhead-lengthOverhead)
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(hdr[:]); err != nil {
		return BatchInfo{}, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	size := length + lengthOverhead
	switch {
	case size < batchOverhead || size > maxStoredBatch:
		return BatchInfo{}, fmt.Errorf("%w: batch length %d", ErrCorruptBatch, length)
	case kb.Magic != 2:
		return BatchInfo{}, fmt.Errorf("%w: magic %d", ErrCorruptBatch, kb.Magic)
	case checkRecordCount(&kb, true) != nil:
		return BatchInfo{}, checkRecordCount(&kb, true)
	case kb.FirstOffset < 0:
		return BatchInfo{}, fmt.Errorf("%w: base offset %d", ErrCorruptBatch, kb.FirstOffset)
	}
	info := infoOf(&kb, int(size))
	info.BaseOffset, info.LastOffset = kb.FirstOffset, kb.FirstOffset+int64(kb.LastOffsetDelta)
	if info.Control == ControlUnread {
		typ, coordinatorEpoch, err := readControl(uint16(kb.Attributes), h[batchOverhead:min(int64(len(h)), size)])
		switch {
		case err == nil:
			info.Control, info.CoordinatorEpoch = typ, coordinatorEpoch
		case !errors.Is(err, errShortControl):
			return BatchInfo{}, err
		}
	}
	return info, nil
}

// ParseStoredBatch validates raw as one whole batch read back from a log,
// with every check of ParseBatch (the checksum among them) but those that
// only a client's batch must pass: a control batch is accepted, its type
// read (an uncompressed one whose record decodes, else ErrCorruptBatch),
// and a producer id without sequences too (a marker, a coordinator's
// batch). It returns the batch without copying raw, its info carrying the
// offsets the log gave it; AppendTime is zero. Its errors are ParseBatch's.
// O(len(raw)).
func ParseStoredBatch(raw []byte) (*Batch, error) {
	b, err := parseBatch(raw, fromLog)
	if err != nil {
		return nil, err
	}
	base := int64(binary.BigEndian.Uint64(raw[0:8]))
	if base < 0 {
		return nil, fmt.Errorf("%w: base offset %d", ErrCorruptBatch, base)
	}
	b.info.BaseOffset, b.info.LastOffset = base, base+b.info.LastOffset
	return b, nil
}

// parseFetched validates records, zero or more whole batches back to back
// as a Fetch response carries them from a leader, each with every check of
// ParseStoredBatch, and returns them in order without copying records. A
// trailing batch shorter than its length says is left out: a fetch's byte
// limit cuts the last batch, and Kafka's followers ignore what it cut. A
// length too short for a batch header, or any batch that fails its checks,
// is an error wrapping ErrCorruptBatch (or ParseBatch's others).
// O(len(records)) for the checksums.
func parseFetched(records []byte) ([]*Batch, error) {
	var out []*Batch
	for pos := 0; len(records)-pos >= lengthOverhead; {
		length := int64(int32(binary.BigEndian.Uint32(records[pos+8 : pos+12])))
		size := length + lengthOverhead
		if size < batchOverhead {
			return nil, fmt.Errorf("%w: batch length %d at byte %d is shorter than its header", ErrCorruptBatch, length, pos)
		}
		if size > int64(len(records)-pos) {
			break // cut by the fetch's byte limit
		}
		b, err := ParseStoredBatch(records[pos : pos+int(size)])
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		out = append(out, b)
		pos += int(size)
	}
	return out, nil
}

// own returns a copy of b, a batch that carries its offsets, appended at
// now: the log's bytes are its own and immutable, whatever becomes of the
// buffer b was parsed from.
func (b *Batch) own(now time.Time) *Batch {
	info := b.info
	info.AppendTime = now.UnixMilli()
	return &Batch{raw: bytes.Clone(b.raw), info: info}
}
