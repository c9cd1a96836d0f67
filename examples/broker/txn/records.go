package txn

// The records of __transaction_state, as Kafka's TransactionLog writes
// them, encoded by kmsg:
//
//   - key TxnMetadataKey version 0 (the transactional id);
//   - value TxnMetadataValue version 0: the producer id and epoch, the
//     timeout, the state, the partitions in the transaction (null when
//     Empty, grouped by topic), the last update and start times in
//     wall-clock milliseconds. Version 1 (KIP-890's flexible value, whose
//     tagged fields transaction version 2 writes) is read too; its tags
//     are not needed by version 1 and are ignored;
//   - a null value, a tombstone: the id expired.
//
// Each change is one batch (encodeBatch): uncompressed, from no producer,
// so that it is whole or absent in the partition. The latest record of an
// id wins (Replay).

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keyVersion   = 0
	valueVersion = 0
)

// valueRecord is the record of txnID's metadata m.
func valueRecord(txnID string, m *metadata) kmsg.Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.pid, m.epoch, m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp, v.StartTimestamp = m.updated, m.start
	if m.state != Empty {
		// Kafka writes the partitions of every state but Empty, an
		// empty array for the Complete ones.
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.parts.sorted() {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			vt := kmsg.NewTxnMetadataValueTopic()
			vt.Topic, vt.Partitions = tp.Topic, []int32{tp.Partition}
			v.Topics = append(v.Topics, vt)
		}
	}
	return kmsg.Record{Key: key(txnID), Value: v.AppendTo(nil)}
}

// tombstone is the record of txnID expired.
func tombstone(txnID string) kmsg.Record { return kmsg.Record{Key: key(txnID)} }

func key(txnID string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, txnID
	return k.AppendTo(nil)
}

// decode reads one record: the id, and its metadata, nil for a tombstone.
func decode(r kmsg.Record) (string, *metadata, error) {
	if len(r.Key) < 2 {
		return "", nil, fmt.Errorf("%w: a key of %d bytes", ErrRecord, len(r.Key))
	}
	if version := int16(binary.BigEndian.Uint16(r.Key)); version != keyVersion {
		return "", nil, fmt.Errorf("%w: key version %d", ErrRecord, version)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if r.Value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if v.Version > 1 {
		return "", nil, fmt.Errorf("%w: value version %d", ErrRecord, v.Version)
	}
	st := State(v.State)
	if st < Empty || st > CompleteAbort {
		// Dead and PrepareEpochFence are never written.
		return "", nil, fmt.Errorf("%w: %s's state %d", ErrRecord, k.TransactionalID, v.State)
	}
	m := &metadata{pid: v.ProducerID, lastPID: noProducerID, epoch: v.ProducerEpoch, lastEpoch: noEpoch,
		timeoutMs: v.TimeoutMillis, state: st, start: v.StartTimestamp, updated: v.LastUpdateTimestamp}
	for _, vt := range v.Topics {
		for _, p := range vt.Partitions {
			if m.parts == nil {
				m.parts = make(partitions)
			}
			m.parts[TopicPartition{Topic: vt.Topic, Partition: p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch returns recs as one v2 record batch at base offset 0 (the
// partition places it), timestamped now, from no producer, uncompressed.
func encodeBatch(now time.Time, recs ...kmsg.Record) []byte {
	var body []byte
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the zero length took one varint byte
		body = r.AppendTo(body)
	}
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body}
	b.Length = int32(49 + len(body)) // the header after the length field, then the records
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli)) // attributes to the end
	return b.AppendTo(raw[:0])
}

// Replay is what a partition of __transaction_state adds up to: the
// latest value of each transactional id, tombstones dropping it. It is
// the coordinator runtime's State of the partition (coordinator.State):
// the load replays into one, and the compaction follows the partition's
// appends with one and writes its live records again (Rewrite). The zero
// Replay is empty and ready.
type Replay struct {
	txns    map[string]*metadata
	next    int64 // the offset after the last batch applied
	records int64 // records applied
}

// Apply applies raw, whole batches as a partition's Read returns them,
// concatenated, and returns the offset after the last one. A record this
// package does not write fails it with ErrRecord, rather than forget a
// transaction clients were told is under way. O(records).
func (r *Replay) Apply(raw []byte) (next int64, err error) {
	for len(raw) > 0 {
		if len(raw) < 12 {
			return r.next, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrRecord, len(raw))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size < 12+49 || size > len(raw) {
			return r.next, fmt.Errorf("%w: a batch of %d bytes, %d left", ErrRecord, size, len(raw))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return r.next, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		if b.Attributes&0x07 != 0 {
			return r.next, fmt.Errorf("%w: a compressed batch", ErrRecord)
		}
		rest := b.Records
		for range b.NumRecords {
			length, n := kbin.Varint(rest)
			end := n + int(length)
			if n == 0 || length < 0 || end > len(rest) {
				return r.next, fmt.Errorf("%w: a record cut short", ErrRecord)
			}
			var rec kmsg.Record
			if err := rec.ReadFrom(rest[:end]); err != nil {
				return r.next, fmt.Errorf("%w: %v", ErrRecord, err)
			}
			id, m, err := decode(rec)
			if err != nil {
				return r.next, err
			}
			r.apply(id, m)
			r.records++
			rest = rest[end:]
		}
		r.next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		raw = raw[size:]
	}
	return r.next, nil
}

// apply applies one record: m is id's latest value, nil a tombstone.
func (r *Replay) apply(id string, m *metadata) {
	if m == nil {
		delete(r.txns, id)
		return
	}
	if r.txns == nil {
		r.txns = make(map[string]*metadata)
	}
	r.txns[id] = m
}

// Records returns the number of records applied. O(1).
func (r *Replay) Records() int64 { return r.records }

// Live returns the number of live records: one per transactional id left.
// The others applied (overwritten values, tombstones) are dead. O(1).
func (r *Replay) Live() int64 { return int64(len(r.txns)) }

// Rewrite returns the live records as batches timestamped now, id by id in
// name order: a compaction of what was applied. Replayed after the records
// applied, or instead of them, they give the same transactions, and so
// does any prefix of them after those records (each holds its id's latest
// value). A batch holds at most maxRecords records, and stops before the
// record that would take it past maxBytes (a record larger than that is
// alone in its batch). O(live records).
func (r *Replay) Rewrite(now time.Time, maxRecords, maxBytes int) [][]byte {
	var out [][]byte
	var recs []kmsg.Record
	size := 0
	for _, id := range slices.Sorted(maps.Keys(r.txns)) {
		rec := valueRecord(id, r.txns[id])
		n := len(rec.Key) + len(rec.Value) + 16 // the record's framing, at most
		if len(recs) == maxRecords || (len(recs) > 0 && size+n > maxBytes) {
			out = append(out, encodeBatch(now, recs...))
			recs, size = recs[:0], 0
		}
		recs = append(recs, rec)
		size += n
	}
	if len(recs) > 0 {
		out = append(out, encodeBatch(now, recs...))
	}
	return out
}

// Len returns the number of transactional ids replayed. O(1).
func (r *Replay) Len() int { return len(r.txns) }
