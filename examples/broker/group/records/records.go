package records

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/internal/statebatch"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
)

// ErrRecord is wrapped for a batch or record that is not one this package
// writes.
var ErrRecord = errors.New("records: not an offsets record")

const (
	offsetKeyVersion  = 1
	groupKeyVersion   = 2
	groupValueVersion = 3
)

// Offset is the record of group's commit of o.
func Offset(g string, o group.StoredOffset) kmsg.Record {
	return kmsg.Record{Key: offsetKey(g, o.TopicPartition), Value: offsetValue(o)}
}

// OffsetTombstone is the record of group's offset of tp deleted or
// expired.
func OffsetTombstone(g string, tp group.TopicPartition) kmsg.Record {
	return kmsg.Record{Key: offsetKey(g, tp)}
}

// Group is the record of g's metadata (g.Offsets aside): its protocol
// type, generation, protocol, leader, and members with their
// subscriptions and assignments, as GroupMetadataValue version 3, the
// last before the flexible version 4 and the first with static members'
// instance ids (Kafka's GroupMetadataManager writes it from 2.3 on).
func Group(g group.StoredGroup) kmsg.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType, v.Generation = g.ProtocolType, g.Generation
	if g.Protocol != "" {
		v.Protocol = &g.Protocol
	}
	if g.Leader != "" {
		v.Leader = &g.Leader
	}
	v.CurrentStateTimestamp = -1
	if !g.StateSince.IsZero() {
		v.CurrentStateTimestamp = g.StateSince.UnixMilli()
	}
	for _, m := range g.Members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			vm.InstanceID = &m.InstanceID
		}
		vm.RebalanceTimeoutMillis = int32(m.RebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.SessionTimeout.Milliseconds())
		vm.Subscription, vm.Assignment = m.Subscription, m.Assignment
		v.Members = append(v.Members, vm)
	}
	return kmsg.Record{Key: groupKey(g.Group), Value: v.AppendTo(nil)}
}

// GroupTombstone is the record of group gone, with its offsets.
func GroupTombstone(g string) kmsg.Record { return kmsg.Record{Key: groupKey(g)} }

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

func groupKey(g string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, g
	return k.AppendTo(nil)
}

// Batch returns recs as one v2 record batch at base offset 0 (the
// partition places it), timestamped now, from no producer, uncompressed.
func Batch(now time.Time, recs []kmsg.Record) []byte {
	return batch(now, 0, -1, -1, recs)
}

// TxnBatch returns recs, a transaction's offsets, as Batch does but as a
// transactional batch of producerID at producerEpoch, with no sequence
// (-1: the coordinator's appends are not a producer's retries), as
// Kafka's group coordinator writes a TxnOffsetCommit. The records are
// pending until the transaction's marker (a control batch of the
// producer) follows them in the partition.
func TxnBatch(now time.Time, producerID int64, producerEpoch int16, recs []kmsg.Record) []byte {
	return batch(now, statebatch.AttrTransactional, producerID, producerEpoch, recs)
}

func batch(now time.Time, attrs int16, producerID int64, producerEpoch int16, recs []kmsg.Record) []byte {
	return statebatch.Encode(now, attrs, producerID, producerEpoch, recs)
}

// A change is one record decoded: a group's offset, or its metadata, set
// or deleted.
type change struct {
	group    string
	isOffset bool
	tp       group.TopicPartition
	offset   group.StoredOffset // when set; its Position is the record's offset
	meta     group.StoredGroup  // when set: the group's metadata, without offsets
	deleted  bool               // a tombstone
	// producer is the producer id of a transactional batch's record: its
	// offset is pending in the producer's transaction. -1 otherwise.
	producer int64
}

// membershipKeyVersion returns the version of key if it is a consumer
// group's (consumer.go) or a share group's (share.go).
func membershipKeyVersion(key []byte) (int16, bool) {
	if len(key) < 2 {
		return 0, false
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case consumerGroupKeyVersion, consumerMemberKeyVersion, shareGroupKeyVersion, shareMemberKeyVersion:
		return v, true
	}
	return 0, false
}

// decode reads one record, at position pos of the log.
func decode(r kmsg.Record, pos int64) (change, error) {
	if len(r.Key) < 2 {
		return change{}, fmt.Errorf("%w: a key of %d bytes", ErrRecord, len(r.Key))
	}
	switch version := int16(binary.BigEndian.Uint16(r.Key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return change{}, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		c := change{group: k.Group, isOffset: true, tp: group.TopicPartition{Topic: k.Topic, Partition: k.Partition}, deleted: r.Value == nil}
		if c.deleted {
			return c, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return change{}, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		c.offset = group.StoredOffset{TopicPartition: c.tp, Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata,
			Committed: time.UnixMilli(v.CommitTimestamp), Position: pos}
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
			return change{}, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		c := change{group: k.Group, deleted: r.Value == nil}
		if c.deleted {
			return c, nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			return change{}, fmt.Errorf("%w: %v", ErrRecord, err)
		}
		c.meta = groupMeta(k.Group, &v)
		return c, nil
	default:
		return change{}, fmt.Errorf("%w: key version %d", ErrRecord, version)
	}
}

// groupMeta reads the group's metadata from v, whatever its version.
func groupMeta(name string, v *kmsg.GroupMetadataValue) group.StoredGroup {
	g := group.StoredGroup{Group: name, ProtocolType: v.ProtocolType, Generation: v.Generation}
	if v.Protocol != nil {
		g.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.Leader = *v.Leader
	}
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		g.StateSince = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, vm := range v.Members {
		m := group.StoredMember{MemberID: vm.MemberID, ClientID: vm.ClientID, ClientHost: vm.ClientHost,
			SessionTimeout: time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			// Copies: the record's bytes are the reader's buffer.
			Subscription: slices.Clone(vm.Subscription), Assignment: slices.Clone(vm.Assignment)}
		m.RebalanceTimeout = m.SessionTimeout // version 0 has none: Kafka takes the session timeout
		if v.Version >= 1 && vm.RebalanceTimeoutMillis >= 0 {
			m.RebalanceTimeout = time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond
		}
		if vm.InstanceID != nil {
			m.InstanceID = *vm.InstanceID
		}
		g.Members = append(g.Members, m)
	}
	return g
}

// Replay is what a partition's records add up to: the latest value of
// each key, and the offsets of the transactions still open. The zero
// Replay is empty and ready.
type Replay struct {
	groups map[string]*groupState
	// open holds, by producer id, the groups with offsets pending in the
	// producer's transaction (Kafka's openTransactionsByGroup, the other
	// way round): its marker ends them.
	open map[int64]map[string]struct{}
	// consumers are the KIP-848 consumer groups, by name (consumer.go).
	consumers memberships[consumergroup.StoredGroup, consumergroup.StoredMember]
	// shares are the KIP-932 share groups, by name (share.go).
	shares  memberships[sharegroup.StoredGroup, sharegroup.StoredMember]
	next    int64 // the offset after the last batch applied
	records int64 // records applied, control records included
	live    int64 // records Rewrite would write: live keys
}

type groupState struct {
	meta    *group.StoredGroup // nil when no group record is live; without offsets
	offsets map[group.TopicPartition]group.StoredOffset
	// txns holds the offsets pending in open transactions, by producer.
	txns map[int64]map[group.TopicPartition]group.StoredOffset
}

// hasMeta reports whether the group's metadata is live: a group record
// without a protocol type (an older writer's, for a group that never had
// members) says nothing.
func (gs *groupState) hasMeta() bool { return gs.meta != nil && gs.meta.ProtocolType != "" }

// exists reports whether the group is left: it has live metadata,
// offsets, or offsets pending.
func (gs *groupState) exists() bool { return gs.hasMeta() || len(gs.offsets) > 0 || len(gs.txns) > 0 }

// Apply applies raw, whole batches as a partition's Read returns them,
// concatenated, and returns the offset after the last one. O(records).
func (r *Replay) Apply(raw []byte) (next int64, err error) {
	r.next, err = statebatch.Walk(raw, r.next, func(b *kmsg.RecordBatch, rec *kmsg.Record) error {
		if b.Attributes&statebatch.AttrControl != 0 {
			commit, err := endTxn(*rec)
			if err != nil {
				return err
			}
			r.endTxn(b.ProducerID, commit)
		} else if v, ok := membershipKeyVersion(rec.Key); ok {
			// A consumer or share group's record (consumer.go,
			// share.go): never in a transaction, it applies at once.
			var n int64
			var err error
			switch v {
			case consumerGroupKeyVersion, consumerMemberKeyVersion:
				n, err = r.consumers.applyRecord(*rec, v == consumerGroupKeyVersion, decodeConsumerGroup, decodeConsumerMember)
			default:
				n, err = r.shares.applyRecord(*rec, v == shareGroupKeyVersion, decodeShareGroup, decodeShareMember)
			}
			if err != nil {
				return err
			}
			r.live += n
		} else {
			c, err := decode(*rec, b.FirstOffset+int64(rec.OffsetDelta))
			if err != nil {
				return err
			}
			c.producer = -1
			if b.Attributes&statebatch.AttrTransactional != 0 {
				c.producer = b.ProducerID
			}
			r.apply(c)
		}
		r.records++
		return nil
	})
	if errors.Is(err, statebatch.ErrMalformed) {
		err = fmt.Errorf("%w: %v", ErrRecord, err)
	}
	return r.next, err
}

// endTxn reads a control record: a transaction's marker, commit or
// abort (Kafka's ControlRecordType COMMIT and ABORT). A key version newer
// than 0 is read as 0, as Kafka's ControlRecordType.parse reads it.
func endTxn(rec kmsg.Record) (commit bool, err error) {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return false, fmt.Errorf("%w: a control record: %v", ErrRecord, err)
	}
	switch {
	case k.Version < 0:
		return false, fmt.Errorf("%w: a control record of version %d", ErrRecord, k.Version)
	case k.Type == kmsg.ControlRecordKeyTypeCommit:
		return true, nil
	case k.Type == kmsg.ControlRecordKeyTypeAbort:
		return false, nil
	}
	return false, fmt.Errorf("%w: a control record of type %v", ErrRecord, k.Type)
}

// apply applies one record's change.
func (r *Replay) apply(c change) {
	if r.groups == nil {
		r.groups = make(map[string]*groupState)
	}
	gs := r.groups[c.group]
	if gs == nil {
		gs = &groupState{offsets: make(map[group.TopicPartition]group.StoredOffset)}
		r.groups[c.group] = gs
	}
	r.live -= gs.live()
	defer func() {
		if r.groups[c.group] == gs {
			r.live += gs.live()
		}
	}()
	switch {
	case c.isOffset && c.deleted && c.producer >= 0:
		// Not one this package writes; Kafka's load drops the
		// producer's pending offset.
		r.dropPending(c.group, gs, c.producer, c.tp)
	case c.isOffset && c.deleted:
		// A tombstone drops the offsets pending of the partition too,
		// as Kafka's replay does, so that their marker does not
		// bring back an offset deleted after them.
		delete(gs.offsets, c.tp)
		for id := range gs.txns {
			r.dropPending(c.group, gs, id, c.tp)
		}
	case c.isOffset && c.producer >= 0:
		r.addPending(c.group, gs, c.producer, c.offset)
	case c.isOffset:
		gs.offsets[c.tp] = c.offset
	case c.deleted:
		// The group is gone, and its offsets with it (Kafka writes
		// their tombstones too; an older writer may not have), the
		// pending ones too.
		for id := range gs.txns {
			r.closeTxn(c.group, gs, id)
		}
		delete(r.groups, c.group)
		return
	default:
		// A group record in a transactional batch (not one this
		// package writes) applies at once, as in Kafka's load.
		m := c.meta
		gs.meta = &m
	}
	if !gs.exists() {
		delete(r.groups, c.group)
	}
}

// addPending makes o pending in producer's transaction in group g.
func (r *Replay) addPending(g string, gs *groupState, producer int64, o group.StoredOffset) {
	if gs.txns == nil {
		gs.txns = make(map[int64]map[group.TopicPartition]group.StoredOffset)
	}
	offs := gs.txns[producer]
	if offs == nil {
		offs = make(map[group.TopicPartition]group.StoredOffset)
		gs.txns[producer] = offs
		if r.open == nil {
			r.open = make(map[int64]map[string]struct{})
		}
		if r.open[producer] == nil {
			r.open[producer] = make(map[string]struct{})
		}
		r.open[producer][g] = struct{}{}
	}
	offs[o.TopicPartition] = o
}

// dropPending drops producer's offset of tp pending in group g.
func (r *Replay) dropPending(g string, gs *groupState, producer int64, tp group.TopicPartition) {
	offs := gs.txns[producer]
	delete(offs, tp)
	if len(offs) == 0 {
		r.closeTxn(g, gs, producer)
	}
}

// closeTxn forgets producer's transaction in group g.
func (r *Replay) closeTxn(g string, gs *groupState, producer int64) {
	delete(gs.txns, producer)
	if gs := r.open[producer]; gs != nil {
		delete(gs, g)
		if len(gs) == 0 {
			delete(r.open, producer)
		}
	}
}

// endTxn applies producer's marker: a commit makes each offset pending in
// its transaction the group's, unless the group's committed offset of
// the partition has the newer record (Kafka's replayEndTransactionMarker);
// an abort drops them. A marker with nothing pending is no error: the
// transaction wrote nothing here, or a tombstone dropped it.
// O(groups of the producer + their offsets).
func (r *Replay) endTxn(producer int64, commit bool) {
	for g := range r.open[producer] {
		gs := r.groups[g]
		r.live -= gs.live()
		offs := gs.txns[producer]
		r.closeTxn(g, gs, producer)
		if commit {
			for tp, o := range offs {
				if cur, ok := gs.offsets[tp]; !ok || cur.Position < o.Position {
					gs.offsets[tp] = o
				}
			}
		}
		if gs.exists() {
			r.live += gs.live()
		} else {
			delete(r.groups, g)
		}
	}
}

// live is the number of the group's records Rewrite writes.
func (gs *groupState) live() int64 {
	n := int64(len(gs.offsets))
	if gs.hasMeta() {
		n++
	}
	return n
}

// Groups returns the groups replayed, by name, each with its offsets by
// topic and partition, and those pending in open transactions by
// producer, topic and partition; each offset with its record's position.
func (r *Replay) Groups() []group.StoredGroup {
	out := make([]group.StoredGroup, 0, len(r.groups))
	for name, gs := range r.groups {
		sg := group.StoredGroup{Group: name}
		if gs.hasMeta() {
			sg = *gs.meta
			sg.Group = name
		}
		for _, o := range gs.offsets {
			sg.Offsets = append(sg.Offsets, o)
		}
		slices.SortFunc(sg.Offsets, func(x, y group.StoredOffset) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
		})
		for id, offs := range gs.txns {
			for _, o := range offs {
				sg.TxnOffsets = append(sg.TxnOffsets, group.StoredTxnOffset{ProducerID: id, StoredOffset: o})
			}
		}
		slices.SortFunc(sg.TxnOffsets, func(x, y group.StoredTxnOffset) int {
			return cmp.Or(cmp.Compare(x.ProducerID, y.ProducerID), cmp.Compare(x.Topic, y.Topic),
				cmp.Compare(x.Partition, y.Partition))
		})
		out = append(out, sg)
	}
	slices.SortFunc(out, func(x, y group.StoredGroup) int { return cmp.Compare(x.Group, y.Group) })
	return out
}
