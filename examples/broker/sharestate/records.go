package sharestate

// The records of __share_group_state, in this broker's own format.
//
// Kafka writes ShareSnapshotKey/ShareSnapshotValue and
// ShareUpdateKey/ShareUpdateValue records (its share coordinator's
// generated record types), which kmsg does not have, and this broker never
// hand-encodes Kafka's protocol. So each record is made of kmsg's
// messages of the share-state RPCs themselves, at a fixed version:
//
//   - key: a DeleteShareGroupStateRequest version 0 naming exactly one
//     topic and one partition (its group id, topic id and partition are
//     the key, and nothing else);
//   - value: a WriteShareGroupStateRequest version 1 of that one topic and
//     partition, the state whole: its state epoch, leader epoch, start
//     offset and state batches;
//   - a null value, a tombstone: the state deleted.
//
// Every record is a full snapshot of its key (Kafka writes a snapshot,
// then deltas, and a new snapshot every
// share.coordinator.snapshot.update.records.per.snapshot updates): a
// write costs the key's window in runs (group.share.partition.max.record.locks
// records, and the rest of the batch that crossed it), and replay
// needs no merging of batches. The latest record of a key wins, and the
// runtime's compaction drops the others. A topic written by this broker
// is therefore not readable by Kafka's share coordinator, nor the other
// way round.
//
// Each change is one batch (encodeBatch): uncompressed, from no producer.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/statebatch"
)

const (
	keyVersion   = 0 // DeleteShareGroupStateRequest's
	valueVersion = 1 // WriteShareGroupStateRequest's
)

// Batch is a run of offsets of a share partition's window in one delivery
// state with one delivery count (Kafka's PersisterStateBatch).
type Batch struct {
	First, Last   int64
	DeliveryState int8 // 0 available, 1 acquired, 2 acknowledged, 4 archived
	DeliveryCount int16
}

// State is a share partition's persisted state (Kafka's ShareGroupOffset):
// the epochs that fence stale writers, the share-partition start offset
// (-1: not initialized), and the window's records from there in runs.
type State struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	Batches     []Batch
}

// encodeKey returns k's record key.
func encodeKey(k Key) []byte {
	req := kmsg.NewDeleteShareGroupStateRequest()
	req.Version, req.GroupID = keyVersion, k.Group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = k.Topic
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = k.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req.AppendTo(nil)
}

// encodeValue returns st's record value.
func encodeValue(k Key, st *State) []byte {
	req := kmsg.NewWriteShareGroupStateRequest()
	req.Version, req.GroupID = valueVersion, k.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = k.Topic
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	for _, b := range st.Batches {
		p.StateBatches = append(p.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req.AppendTo(nil)
}

// record is k's record: st's value, or a tombstone when st is nil.
func record(k Key, st *State) kmsg.Record {
	r := kmsg.Record{Key: encodeKey(k)}
	if st != nil {
		r.Value = encodeValue(k, st)
	}
	return r
}

// decode reads one record: the key, and its state, nil for a tombstone.
func decode(r kmsg.Record) (Key, *State, error) {
	kr := kmsg.NewDeleteShareGroupStateRequest()
	kr.Version = keyVersion
	if err := kr.ReadFrom(r.Key); err != nil {
		return Key{}, nil, fmt.Errorf("%w: key: %v", ErrRecord, err)
	}
	if len(kr.Topics) != 1 || len(kr.Topics[0].Partitions) != 1 {
		return Key{}, nil, fmt.Errorf("%w: a key of %d topics", ErrRecord, len(kr.Topics))
	}
	k := Key{Group: kr.GroupID, Topic: kr.Topics[0].TopicID, Partition: kr.Topics[0].Partitions[0].Partition}
	if r.Value == nil {
		return k, nil, nil
	}
	vr := kmsg.NewWriteShareGroupStateRequest()
	vr.Version = valueVersion
	if err := vr.ReadFrom(r.Value); err != nil {
		return Key{}, nil, fmt.Errorf("%w: %s's value: %v", ErrRecord, k, err)
	}
	if len(vr.Topics) != 1 || len(vr.Topics[0].Partitions) != 1 || vr.GroupID != k.Group ||
		vr.Topics[0].TopicID != k.Topic || vr.Topics[0].Partitions[0].Partition != k.Partition {
		return Key{}, nil, fmt.Errorf("%w: %s's value names another partition", ErrRecord, k)
	}
	p := vr.Topics[0].Partitions[0]
	st := &State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
	for _, b := range p.StateBatches {
		st.Batches = append(st.Batches, Batch{First: b.FirstOffset, Last: b.LastOffset,
			DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
	}
	return k, st, nil
}

// encodeBatch returns recs as one v2 record batch at base offset 0 (the
// partition places it), timestamped now, from no producer, uncompressed.
func encodeBatch(now time.Time, recs ...kmsg.Record) []byte {
	return statebatch.Encode(now, 0, -1, -1, recs)
}

// Replay is what a partition of __share_group_state adds up to: the latest
// state of each share partition, tombstones dropping it. It is the
// coordinator runtime's State of the partition (coordinator.State). The
// zero Replay is empty and ready.
type Replay struct {
	statebatch.Latest[Key, State]
}

// Apply applies raw, whole batches as a partition's Read returns them,
// concatenated, and returns the offset after the last one. A record this
// package does not write fails it with ErrRecord, rather than forget what
// a share group was told is acknowledged. O(records).
func (r *Replay) Apply(raw []byte) (next int64, err error) {
	return r.Latest.Apply(raw, decode, ErrRecord)
}

// Rewrite returns the live records as batches timestamped now, key by key
// in order: replayed after the records applied, or instead of them, they
// give the same states. A batch holds at most maxRecords records, and
// stops before the record that would take it past maxBytes (a larger
// record is alone in its batch). O(live records).
func (r *Replay) Rewrite(now time.Time, maxRecords, maxBytes int) [][]byte {
	var out [][]byte
	var recs []kmsg.Record
	size := 0
	for _, k := range slices.SortedFunc(maps.Keys(r.Values()), compareKeys) {
		rec := record(k, r.Values()[k])
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

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	if c := slices.Compare(a.Topic[:], b.Topic[:]); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}
