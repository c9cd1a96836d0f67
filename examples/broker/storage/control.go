package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Control batches are those a broker writes into a partition, never a
// producer (attribute bit 5): here, the transaction markers that end a
// producer's transaction (Kafka's EndTransactionMarker). A control batch
// holds one control record, whose key says what it is
// (kmsg.ControlRecordKey: version 0, type 0 for an abort, 1 for a commit)
// and whose value, for a marker, names the epoch of the transaction
// coordinator that wrote it (kmsg.EndTxnMarker). Kafka writes them
// uncompressed, and so does AppendMarker: a compressed one is refused as
// corrupt, so that its type is read without inflating anything.

// A ControlType says whether a batch is a control batch, and which. The
// zero value is a data batch.
type ControlType int8

const (
	// ControlNone is a data batch: records a producer, or a coordinator
	// of the broker, wrote.
	ControlNone ControlType = iota
	// ControlAbort is a transaction marker that aborts its producer's
	// transaction (control record type 0, Kafka's ABORT).
	ControlAbort
	// ControlCommit is a transaction marker that commits its producer's
	// transaction (control record type 1, Kafka's COMMIT).
	ControlCommit
	// ControlOther is a control batch of another type (Kafka's KRaft
	// records: LEADER_CHANGE, snapshot headers...). This broker writes
	// none in a partition; one read carries no producer state.
	ControlOther
	// ControlUnread is a control batch whose type was not read:
	// ReadBatchHeader was given its header alone, and the type is in
	// its record.
	ControlUnread
)

// String returns the control type's name.
func (c ControlType) String() string {
	switch c {
	case ControlNone:
		return "none"
	case ControlAbort:
		return "abort"
	case ControlCommit:
		return "commit"
	case ControlOther:
		return "other"
	case ControlUnread:
		return "unread"
	}
	return fmt.Sprintf("ControlType(%d)", int8(c))
}

// The control record types of transaction markers (kmsg.ControlRecordKeyType).
const (
	controlKeyAbort  kmsg.ControlRecordKeyType = 0
	controlKeyCommit kmsg.ControlRecordKeyType = 1
)

// errShortControl is why readControl stops: the bytes it was given end
// before the control record does.
var errShortControl = errors.New("the control record is cut short")

// readControl reads a control batch's type, and a marker's coordinator
// epoch, from its first record, at the start of records (the bytes after
// the batch's header), attrs being the batch's attributes. It returns
// errShortControl when records end before that record does, and an error
// wrapping ErrCorruptBatch for a compressed control batch or a record that
// does not decode as a control record. O(1): one record is decoded.
func readControl(attrs uint16, records []byte) (ControlType, int32, error) {
	if attrs&attrCompression != codecNone {
		return 0, 0, fmt.Errorf("%w: a compressed control batch", ErrCorruptBatch)
	}
	length, n := kbin.Varint(records)
	if n == 0 {
		if len(records) < maxVarint32 {
			return 0, 0, errShortControl
		}
		return 0, 0, fmt.Errorf("%w: the control record's length does not decode", ErrCorruptBatch)
	}
	if length < 0 {
		return 0, 0, fmt.Errorf("%w: control record length %d", ErrCorruptBatch, length)
	}
	if end := n + int(length); end <= len(records) {
		records = records[:end]
	} else {
		return 0, 0, errShortControl
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(records); err != nil {
		return 0, 0, fmt.Errorf("%w: the control record does not decode: %v", ErrCorruptBatch, err)
	}
	// Kafka reads the version and the type and ignores what follows,
	// so that a later key version still reads.
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(rec.Key); err != nil {
		return 0, 0, fmt.Errorf("%w: the control record's key does not decode: %v", ErrCorruptBatch, err)
	}
	var typ ControlType
	switch key.Type {
	case controlKeyAbort:
		typ = ControlAbort
	case controlKeyCommit:
		typ = ControlCommit
	default:
		return ControlOther, 0, nil
	}
	var value kmsg.EndTxnMarker
	if err := value.ReadFrom(rec.Value); err != nil {
		return 0, 0, fmt.Errorf("%w: the transaction marker's value does not decode: %v", ErrCorruptBatch, err)
	}
	return typ, value.CoordinatorEpoch, nil
}

// markerBatch builds m's transaction marker as Kafka's
// MemoryRecords.withEndTransactionMarker does, timestamped now: a control
// batch of m's producer id and epoch (transactional, base sequence -1)
// holding one control record, encoded with kmsg. Its base offset and
// leader epoch are left for the append to write in.
func markerBatch(m Marker, now time.Time) (*Batch, error) {
	typ := controlKeyAbort
	if m.Commit {
		typ = controlKeyCommit
	}
	key := kmsg.ControlRecordKey{Version: 0, Type: typ}
	value := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: m.CoordinatorEpoch}
	rec := kmsg.Record{Key: key.AppendTo(nil), Value: value.AppendTo(nil)}
	// A record's length counts what follows it: encoded with a zero
	// length (one byte), the rest is the record less that byte.
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	ms := now.UnixMilli()
	kb := kmsg.RecordBatch{
		Magic:                2,
		PartitionLeaderEpoch: -1,
		Attributes:           attrTransaction | attrControl,
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           m.ProducerID,
		ProducerEpoch:        m.ProducerEpoch,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              rec.AppendTo(nil),
	}
	kb.Length = int32(batchOverhead - lengthOverhead + len(kb.Records))
	raw := kb.AppendTo(nil)
	kb.CRC = int32(crc32.Checksum(raw[crcCoversFrom:], castagnoli))
	return parseBatch(kb.AppendTo(raw[:0]), fromLog)
}
