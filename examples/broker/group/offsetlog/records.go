package offsetlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

// The records of the offsets log are __consumer_offsets' own, encoded by
// kmsg: a key's version says what it keys (0 and 1: a committed offset, 2:
// a group's metadata); a null value is a tombstone.
const (
	offsetKeyVersion = 1
	groupKeyVersion  = 2
)

// offsetKey is the key of group's offset of tp.
func offsetKey(g string, tp group.TopicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, g, tp.Topic, tp.Partition
	return k.AppendTo(nil)
}

// offsetValue encodes o as Kafka does: version 1 when it has an expiry of
// its own (a field later versions dropped, along with v1's want of a
// leader epoch: commits that set an expiry, v2 to v4, carry none),
// version 3 otherwise.
func offsetValue(o group.StoredOffset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.Metadata = 3, o.Offset, o.LeaderEpoch, o.Metadata
	v.CommitTimestamp = o.Committed.UnixMilli()
	if !o.ExpireAt.IsZero() {
		v.Version, v.ExpireTimestamp = 1, o.ExpireAt.UnixMilli()
	}
	return v.AppendTo(nil)
}

// groupKey is the key of group's metadata.
func groupKey(g string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, g
	return k.AppendTo(nil)
}

// groupValue is group metadata holding only the protocol type: the rest
// (generation, leader, members) is not kept across a restart.
func groupValue(protocolType string) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType = protocolType
	return v.AppendTo(nil)
}

// A change is one record decoded: a group's offset, or its metadata, set
// or deleted.
type change struct {
	group    string
	isOffset bool
	tp       group.TopicPartition
	offset   group.StoredOffset // when set
	ptype    string             // when set
	deleted  bool               // a tombstone
}

// errRecord is wrapped for a record that is not one this log writes.
var errRecord = errors.New("not an offsets record")

// decode reads one record.
func decode(r kmsg.Record) (change, error) {
	if len(r.Key) < 2 {
		return change{}, fmt.Errorf("%w: a key of %d bytes", errRecord, len(r.Key))
	}
	switch version := int16(binary.BigEndian.Uint16(r.Key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return change{}, fmt.Errorf("%w: %v", errRecord, err)
		}
		c := change{group: k.Group, isOffset: true, tp: group.TopicPartition{Topic: k.Topic, Partition: k.Partition}, deleted: r.Value == nil}
		if c.deleted {
			return c, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return change{}, fmt.Errorf("%w: %v", errRecord, err)
		}
		c.offset = group.StoredOffset{TopicPartition: c.tp, Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata,
			Committed: time.UnixMilli(v.CommitTimestamp)}
		if v.Version >= 3 {
			c.offset.LeaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			c.offset.ExpireAt = time.UnixMilli(v.ExpireTimestamp)
		}
		return c, nil
	case groupKeyVersion:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return change{}, fmt.Errorf("%w: %v", errRecord, err)
		}
		c := change{group: k.Group, deleted: r.Value == nil}
		if c.deleted {
			return c, nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			return change{}, fmt.Errorf("%w: %v", errRecord, err)
		}
		c.ptype = v.ProtocolType
		return c, nil
	default:
		return change{}, fmt.Errorf("%w: key version %d", errRecord, version)
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch returns recs as one v2 record batch at base offset base,
// timestamped now, from no producer, uncompressed: the format of a
// partition's log, so that the same checks read it back.
func encodeBatch(base int64, now time.Time, recs []kmsg.Record) []byte {
	var body []byte
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the zero length took one varint byte
		body = r.AppendTo(body)
	}
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body}
	b.Length = int32(49 + len(body)) // the header after the length field, then the records
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli)) // attributes to the end
	return b.AppendTo(raw[:0])
}

// decodeRecords returns the records of raw, one whole, checked batch. Their
// keys and values alias raw; strings decoded from them do not.
func decodeRecords(raw []byte) ([]kmsg.Record, error) {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errRecord, err)
	}
	if b.Attributes&0x07 != 0 {
		return nil, fmt.Errorf("%w: a compressed batch", errRecord)
	}
	recs := make([]kmsg.Record, 0, b.NumRecords)
	rest := b.Records
	for range b.NumRecords {
		length, n := kbin.Varint(rest)
		end := n + int(length)
		if n == 0 || length < 0 || end > len(rest) {
			return nil, fmt.Errorf("%w: a record cut short", errRecord)
		}
		var r kmsg.Record
		if err := r.ReadFrom(rest[:end]); err != nil {
			return nil, fmt.Errorf("%w: %v", errRecord, err)
		}
		recs = append(recs, r)
		rest = rest[end:]
	}
	return recs, nil
}
