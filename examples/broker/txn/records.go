package txn

// The records of __transaction_state, as Kafka's TransactionLog writes
// them, encoded by kmsg:
//
//   - key TxnMetadataKey version 0 (the transactional id);
//   - value TxnMetadataValue version 0: the producer id and epoch, the
//     timeout, the state, the partitions in the transaction (null when
//     Empty, grouped by topic), the last update and start times in
//     wall-clock milliseconds. A transaction version 2 producer's is
//     version 1 (KIP-890's flexible value), with its tagged fields as
//     Kafka writes them: the client's transaction version (2), the
//     previous producer id (the one before a rotation, which a retried
//     EndTxn may still name) and the next producer id (-1 but in a
//     Prepare that rotates it); KIP-939's next epoch stays -1;
//   - a null value, a tombstone: the id expired.
//
// Each change is one batch (encodeBatch): uncompressed, from no producer,
// so that it is whole or absent in the partition. The latest record of an
// id wins (Replay).

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/statebatch"
)

const (
	keyVersion   = 0
	valueVersion = 0
)

// valueRecord is the record of txnID's metadata m.
func valueRecord(txnID string, m *metadata) kmsg.Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	if m.tv2 {
		v.Version = 1
		v.ClientTransactionVersion = 2
		v.PreviousProducerID = m.lastPID
		if m.rotating {
			v.NextProducerID = m.nextPID
		}
	}
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
	if v.Version >= 1 && v.ClientTransactionVersion >= 2 {
		m.tv2, m.lastPID = true, v.PreviousProducerID
		if v.NextProducerID >= 0 && (st == PrepareCommit || st == PrepareAbort) {
			m.rotating, m.nextPID = true, v.NextProducerID
		}
	}
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

// encodeBatch returns recs as one v2 record batch at base offset 0 (the
// partition places it), timestamped now, from no producer, uncompressed.
func encodeBatch(now time.Time, recs ...kmsg.Record) []byte {
	return statebatch.Encode(now, 0, -1, -1, recs)
}

// Replay is what a partition of __transaction_state adds up to: the
// latest value of each transactional id, tombstones dropping it. It is
// the coordinator runtime's State of the partition (coordinator.State):
// the load replays into one, and the compaction follows the partition's
// appends with one and writes its live records again (Rewrite). The zero
// Replay is empty and ready.
type Replay struct {
	statebatch.Latest[string, metadata]
}

// Apply applies raw, whole batches as a partition's Read returns them,
// concatenated, and returns the offset after the last one. A record this
// package does not write fails it with ErrRecord, rather than forget a
// transaction clients were told is under way. O(records).
func (r *Replay) Apply(raw []byte) (next int64, err error) {
	return r.Latest.Apply(raw, decode, ErrRecord)
}

// apply applies one record: m is id's latest value, nil a tombstone.
func (r *Replay) apply(id string, m *metadata) { r.Set(id, m) }

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
	for _, id := range slices.Sorted(maps.Keys(r.Values())) {
		rec := valueRecord(id, r.Values()[id])
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
