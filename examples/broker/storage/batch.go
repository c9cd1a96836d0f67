package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The v2 record batch header, as Kafka lays it out. Only the fields the
// broker itself rewrites are addressed by position: the base offset and the
// partition leader epoch, which the checksum does not cover; everything
// else is read with kmsg.
const (
	batchOverhead     = 61 // header bytes before the first record
	lengthOverhead    = 12 // base offset and length: not counted in the length
	leaderEpochAt     = 12 // partition leader epoch, int32
	crcCoversFrom     = 21 // the CRC-32C covers attributes to the end
	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrTransaction   = 0x10
	attrControl       = 0x20
	maxCompression    = 4 // zstd
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchInfo describes a stored record batch: what the log keeps beside its
// bytes, and what a durable log would keep in its index.
type BatchInfo struct {
	BaseOffset   int64 // assigned by the log
	LastOffset   int64 // BaseOffset + last offset delta
	MaxTimestamp int64 // the batch's max timestamp (CreateTime), ms since the epoch
	AppendTime   int64 // when the log appended it, ms since the epoch
	Size         int   // bytes, header included
	// LeaderEpoch is the partition leader epoch its leader wrote it in
	// (the header's PartitionLeaderEpoch): what the leader-epoch cache
	// is built from.
	LeaderEpoch int32

	// The producer that wrote it (idempotent or transactional), or
	// ProducerID -1. FirstSequence and LastSequence are -1 for a batch
	// without sequences: a transaction marker, or a transactional batch
	// a coordinator wrote for its producer (AppendCoordinator).
	ProducerID    int64
	ProducerEpoch int16
	FirstSequence int32
	LastSequence  int32

	// Transactional is set for a batch of a transaction (attribute bit
	// 4): a transactional producer's records, or a transaction's marker.
	Transactional bool
	// Control says whether it is a control batch, one the broker wrote
	// rather than a producer, and which (ControlNone, the zero value,
	// for a data batch).
	Control ControlType
	// CoordinatorEpoch is a transaction marker's (ControlAbort or
	// ControlCommit): the epoch of the transaction coordinator that
	// wrote it, from the marker's value. 0 for any other batch.
	CoordinatorEpoch int32
}

// retentionTime is the time retention measures a batch's age from: its max
// timestamp, or, for a batch without timestamps (-1), when it was appended
// (Kafka falls back to the segment file's modification time).
func (b BatchInfo) retentionTime() int64 {
	if b.MaxTimestamp < 0 {
		return b.AppendTime
	}
	return b.MaxTimestamp
}

// NumRecords returns how many records the batch holds.
func (b BatchInfo) NumRecords() int64 { return b.LastOffset - b.BaseOffset + 1 }

// hasProducer reports whether a producer id is set: the batch takes part
// in its producer's state (sequences, epoch, transaction).
func (b BatchInfo) hasProducer() bool { return b.ProducerID >= 0 }

// hasSequence reports whether the batch carries sequence numbers, which a
// retry is recognised by: a producer's batch does, a marker and a
// coordinator's batch do not.
func (b BatchInfo) hasSequence() bool { return b.ProducerID >= 0 && b.FirstSequence >= 0 }

// marker reports whether the batch is a transaction marker.
func (b BatchInfo) marker() bool { return b.Control == ControlAbort || b.Control == ControlCommit }

// A Batch is a validated v2 record batch, exactly as the client sent it,
// until Append gives it its offsets.
type Batch struct {
	raw  []byte
	info BatchInfo

	// What validateRecords checks the records against; set by ParseBatch.
	attrs          int16
	numRecords     int32
	firstTimestamp int64
}

// Info returns what the batch's header says; BaseOffset and LastOffset are
// relative (0 and the last offset delta) until the batch is appended.
func (b *Batch) Info() BatchInfo { return b.info }

// Bytes returns the batch's bytes. The caller must not modify them.
func (b *Batch) Bytes() []byte { return b.raw }

// origin is who wrote a batch, which decides what its parse allows
// (Kafka's AppendOrigin).
type origin int8

const (
	// fromClient is a producer's batch, in a produce request (Kafka's
	// AppendOrigin.CLIENT): its producer id needs sequences, and it may
	// not be a control batch.
	fromClient origin = iota
	// fromCoordinator is a batch of the broker's own coordinators
	// (COORDINATOR), AppendCoordinator's: a producer id without
	// sequences is allowed (the group coordinator writes a
	// transaction's offset commits with the client's producer id and
	// epoch, at sequence -1).
	fromCoordinator
	// fromLog is a batch written before and read back, from a log or a
	// leader (REPLICATION): control batches are allowed too, and their
	// type read.
	fromLog
)

// ParseBatch validates raw as one v2 record batch as a client may send it
// in a produce request, and returns it without copying raw. It checks, as
// Kafka does, the framing (exactly one batch, lengths that agree), the magic,
// the CRC-32C, the record count against the last offset delta and the
// compression codec (ErrCorruptBatch), and refuses control batches,
// producer ids without a sequence and transactional batches without a
// producer id (ErrInvalidRecord). Records inside the batch are not decoded
// here: Partition.Append validates them (records.go) before appending a
// client's batch. O(len(raw)) for the checksum.
func ParseBatch(raw []byte) (*Batch, error) { return parseBatch(raw, fromClient) }

// parseBatch is ParseBatch for a batch from, whose rules differ as Kafka's
// LogValidator's do by origin (see origin).
func parseBatch(raw []byte, from origin) (*Batch, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrInvalidRecord)
	}
	if len(raw) < batchOverhead {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a batch header (%d)", ErrCorruptBatch, len(raw), batchOverhead)
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
	switch size := length + lengthOverhead; {
	case size < batchOverhead:
		return nil, fmt.Errorf("%w: batch length %d is shorter than its header", ErrCorruptBatch, length)
	case size > int64(len(raw)):
		return nil, fmt.Errorf("%w: batch length %d runs past the %d bytes sent", ErrCorruptBatch, length, len(raw))
	case size < int64(len(raw)):
		// Kafka: produce requests from v3 on carry exactly one batch
		// per partition.
		return nil, fmt.Errorf("%w: more than one record batch", ErrInvalidRecord)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	if kb.Magic != 2 {
		return nil, fmt.Errorf("%w: magic %d, only v2 batches (magic 2) are accepted", ErrCorruptBatch, kb.Magic)
	}
	if sum := crc32.Checksum(raw[crcCoversFrom:], castagnoli); sum != uint32(kb.CRC) {
		return nil, fmt.Errorf("%w: CRC-32C is %#08x, the batch says %#08x", ErrCorruptBatch, sum, uint32(kb.CRC))
	}
	if err := checkRecordCount(&kb, from == fromLog); err != nil {
		return nil, err
	}
	attrs := uint16(kb.Attributes)
	if attrs&attrCompression > maxCompression {
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, attrs&attrCompression)
	}
	if attrs&attrControl != 0 && from != fromLog {
		// A coordinator's markers go through AppendMarker, which
		// builds them.
		return nil, fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	}
	if attrs&attrTransaction != 0 && kb.ProducerID < 0 {
		return nil, fmt.Errorf("%w: a transactional batch without a producer id", ErrInvalidRecord)
	}
	if kb.ProducerID >= 0 && kb.FirstSequence < 0 && from == fromClient {
		return nil, fmt.Errorf("%w: producer id %d with sequence %d", ErrInvalidRecord, kb.ProducerID, kb.FirstSequence)
	}
	info := infoOf(&kb, len(raw))
	if info.Control == ControlUnread {
		var err error
		if info.Control, info.CoordinatorEpoch, err = readControl(attrs, raw[batchOverhead:]); err != nil {
			return nil, err
		}
	}
	return &Batch{raw: raw, info: info, attrs: kb.Attributes, numRecords: kb.NumRecords, firstTimestamp: kb.FirstTimestamp}, nil
}

// checkRecordCount checks kb's record count against its last offset
// delta: a client's batch holds a record at every offset it spans; a
// batch the log cleaner rewrote (stored) holds fewer, maybe none (a
// producer's last batch, kept empty for its sequence, as Kafka keeps
// it), and keeps the offsets it spanned (KAFKA-5443).
func checkRecordCount(kb *kmsg.RecordBatch, stored bool) error {
	n, last := kb.NumRecords, kb.LastOffsetDelta
	if stored && n >= 0 && last >= 0 && n <= last+1 && (n > 0 || kb.Attributes&attrControl == 0) {
		return nil
	}
	if n < 1 {
		return fmt.Errorf("%w: %d records", ErrCorruptBatch, n)
	}
	if last != n-1 {
		return fmt.Errorf("%w: last offset delta %d with %d records", ErrCorruptBatch, last, n)
	}
	return nil
}

// infoOf returns what kb's header says, its offsets relative (0 and the
// last offset delta).
func infoOf(kb *kmsg.RecordBatch, size int) BatchInfo {
	info := BatchInfo{
		LastOffset:    int64(kb.LastOffsetDelta),
		MaxTimestamp:  kb.MaxTimestamp,
		Size:          size,
		LeaderEpoch:   kb.PartitionLeaderEpoch,
		ProducerID:    kb.ProducerID,
		ProducerEpoch: kb.ProducerEpoch,
		FirstSequence: kb.FirstSequence,
		LastSequence:  kb.FirstSequence,
		Transactional: kb.Attributes&attrTransaction != 0,
	}
	if info.hasSequence() {
		info.LastSequence = addSequence(kb.FirstSequence, kb.LastOffsetDelta)
	}
	if kb.Attributes&attrControl != 0 {
		// Which control batch is said by its record, not its header:
		// the caller reads it if it holds the record.
		info.Control = ControlUnread
	}
	return info
}

// place returns b, its header now carrying its offsets in the log (base
// offset) and the leader epoch it was written in, neither covered by the
// checksum, written in b's bytes: the log keeps the bytes the client sent,
// not a copy (Partition.Append says what its caller gives up).
func (b *Batch) place(base int64, leaderEpoch int32, now time.Time) *Batch {
	raw := b.raw
	binary.BigEndian.PutUint64(raw[0:8], uint64(base))
	binary.BigEndian.PutUint32(raw[leaderEpochAt:leaderEpochAt+4], uint32(leaderEpoch))
	info := b.info
	info.BaseOffset, info.LastOffset = base, base+b.info.LastOffset-b.info.BaseOffset
	info.AppendTime = now.UnixMilli()
	info.LeaderEpoch = leaderEpoch
	return &Batch{raw: raw, info: info}
}

// addSequence returns seq advanced by n, wrapping past MaxInt32 to 0 as
// producers' sequences do (Kafka's DefaultRecordBatch.incrementSequence).
func addSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// Where a v2 batch header keeps its attributes, producer id and epoch.
const (
	attributesAt    = 21
	producerIDAt    = 43
	producerEpochAt = 51
)

// TransactionalProducer returns the producer id and epoch of raw, a
// client's record batch, if its header says it is transactional; false
// for any other batch, or one too short to have a header (Append refuses
// those). It reads three header fields and checks nothing else: the
// produce path asks it whether a batch may open a transaction before it
// appends, O(1).
func TransactionalProducer(raw []byte) (producerID int64, epoch int16, ok bool) {
	if len(raw) < batchOverhead || binary.BigEndian.Uint16(raw[attributesAt:])&attrTransaction == 0 {
		return 0, 0, false
	}
	producerID = int64(binary.BigEndian.Uint64(raw[producerIDAt:]))
	epoch = int16(binary.BigEndian.Uint16(raw[producerEpochAt:]))
	return producerID, epoch, producerID >= 0
}
