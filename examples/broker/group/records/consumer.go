package records

// The records of KIP-848 consumer groups (package consumergroup), in this
// broker's own format.
//
// Kafka writes a consumer group as ConsumerGroupMetadata,
// ConsumerGroupPartitionMetadata, ConsumerGroupMemberMetadata,
// ConsumerGroupTargetAssignmentMetadata/Member and
// ConsumerGroupCurrentMemberAssignment records (key versions 3 to 8 of
// this topic, its group coordinator's generated record types), which kmsg
// does not have, and this broker never hand-encodes Kafka's protocol. So
// each record is made of kmsg's messages of the consumer group RPCs
// themselves, at fixed versions, under key versions Kafka does not use:
//
//   - a group: key GroupMetadataKey at version 848 (the group id); value a
//     ConsumerGroupDescribeResponse version 0 of the one group, without
//     members: its epoch, its target assignment's epoch and its assignor;
//     header "topics-hash", the hash of its subscribed topics as kbin
//     writes an int64.
//   - a member: key OffsetCommitKey at version 849 whose topic is the
//     member id and partition 0; value a ConsumerGroupDescribeResponse
//     version 0 of the group with that one member as it describes it
//     (instance and rack ids, client id and host, its epoch,
//     subscription, assigned partitions, and its target assignment);
//     header "heartbeat", a ConsumerGroupHeartbeatRequest version 1 with
//     what the description lacks: its rebalance timeout, server assignor,
//     partitions pending revocation (its Topics), and its epoch, -2 for a
//     static member that left for now; header "epochs", an
//     OffsetCommitRequest version 10 whose generation is its previous
//     epoch and whose partitions are those it holds, each with the epoch
//     it got it at (its assignment epoch) as committed leader epoch;
//     for a classic member of the group (an online upgrade's), header
//     "classic", a JoinGroupRequest version 5 with its session timeout,
//     protocol type "consumer" and its protocols (Kafka's
//     classic_member_metadata).
//   - a null value: the member left, or the group is gone (its members
//     with it).
//
// A member's reconciliation state is not written: its partitions say it
// (consumergroup's loadedState). The keys differ from the classic
// group's and offsets' by version, so the partition's latest-wins
// compaction (Rewrite) keeps each one's latest record. A topic written by
// this broker is therefore not readable by Kafka's coordinator, nor the
// other way round: Kafka's consumer group records are refused (ErrRecord),
// rather than read as something else.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
)

const (
	consumerGroupKeyVersion  = 848
	consumerMemberKeyVersion = 849

	describeVersion  = 0  // ConsumerGroupDescribeResponse's
	heartbeatVersion = 1  // ConsumerGroupHeartbeatRequest's
	epochsVersion    = 10 // OffsetCommitRequest's, the first by topic id
	classicVersion   = 5  // JoinGroupRequest's

	topicsHashHeader = "topics-hash"
	heartbeatHeader  = "heartbeat"
	epochsHeader     = "epochs"
	classicHeader    = "classic"
)

var consumerKeys = membershipKeys{consumerGroupKeyVersion, consumerMemberKeyVersion}

// ConsumerGroup returns the records of ch, in the order they apply: the
// group's metadata, its members changed, its members removed, and the
// group's tombstone if it is gone.
func ConsumerGroup(ch consumergroup.Change) []kmsg.Record {
	return changeRecords(ch, consumerKeys, consumerGroupRecord, consumerMemberRecord)
}

// consumerGroupRecord is the record of sg's metadata.
func consumerGroupRecord(sg *consumergroup.StoredGroup) kmsg.Record {
	v := kmsg.NewConsumerGroupDescribeResponse()
	v.Version = describeVersion
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = sg.Group, sg.Epoch, sg.TargetEpoch, sg.Assignor
	v.Groups = append(v.Groups, dg)
	return kmsg.Record{Key: consumerKeys.groupKey(sg.Group), Value: v.AppendTo(nil), Headers: []kmsg.Header{topicsHash(sg.TopicsHash)}}
}

// consumerMemberRecord is the record of member sm of group g.
func consumerMemberRecord(g string, sm *consumergroup.StoredMember) kmsg.Record {
	v := kmsg.NewConsumerGroupDescribeResponse()
	v.Version = describeVersion
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group = g
	dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
	dm.MemberID, dm.InstanceID, dm.RackID = sm.MemberID, nilIfEmpty(sm.InstanceID), nilIfEmpty(sm.RackID)
	dm.MemberEpoch, dm.ClientID, dm.ClientHost = sm.Epoch, sm.ClientID, sm.ClientHost
	dm.SubscribedTopics, dm.SubscribedTopicRegex = sm.Names, nilIfEmpty(sm.Regex)
	dm.Assignment, dm.TargetAssignment = wireAssignment(sm.Assigned), wireAssignment(sm.Target)
	dg.Members = append(dg.Members, dm)
	v.Groups = append(v.Groups, dg)

	hb := kmsg.NewConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = heartbeatVersion, g, sm.MemberID, sm.Epoch
	if sm.Left {
		hb.MemberEpoch = consumergroup.StaticLeaveEpoch
	}
	hb.InstanceID, hb.RackID = nilIfEmpty(sm.InstanceID), nilIfEmpty(sm.RackID)
	hb.RebalanceTimeoutMillis = int32(sm.RebalanceTimeout.Milliseconds())
	hb.SubscribedTopicNames, hb.SubscribedTopicRegex, hb.ServerAssignor = sm.Names, nilIfEmpty(sm.Regex), nilIfEmpty(sm.Assignor)
	for _, id := range sm.Revoking.Topics() {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = id, sm.Revoking[id]
		hb.Topics = append(hb.Topics, t)
	}

	ep := kmsg.NewOffsetCommitRequest()
	ep.Version, ep.Group, ep.Generation, ep.MemberID, ep.InstanceID = epochsVersion, g, sm.PrevEpoch, sm.MemberID, nilIfEmpty(sm.InstanceID)
	for _, id := range slices.SortedFunc(maps.Keys(sm.Since), compareIDs) {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.TopicID = id
		for _, p := range slices.Sorted(maps.Keys(sm.Since[id])) {
			pp := kmsg.NewOffsetCommitRequestTopicPartition()
			pp.Partition, pp.Offset, pp.LeaderEpoch = p, -1, sm.Since[id][p]
			t.Partitions = append(t.Partitions, pp)
		}
		ep.Topics = append(ep.Topics, t)
	}
	rec := kmsg.Record{Key: consumerKeys.memberKey(g, sm.MemberID), Value: v.AppendTo(nil), Headers: []kmsg.Header{
		{Key: heartbeatHeader, Value: hb.AppendTo(nil)},
		{Key: epochsHeader, Value: ep.AppendTo(nil)},
	}}
	if sm.Classic != nil {
		jg := kmsg.NewJoinGroupRequest()
		jg.Version, jg.Group, jg.MemberID, jg.InstanceID = classicVersion, g, sm.MemberID, nilIfEmpty(sm.InstanceID)
		jg.SessionTimeoutMillis = int32(sm.Classic.SessionTimeout.Milliseconds())
		jg.RebalanceTimeoutMillis = int32(sm.RebalanceTimeout.Milliseconds())
		jg.ProtocolType = consumergroup.ClassicProtocolType
		for _, p := range sm.Classic.Protocols {
			jp := kmsg.NewJoinGroupRequestProtocol()
			jp.Name, jp.Metadata = p.Name, p.Metadata
			jg.Protocols = append(jg.Protocols, jp)
		}
		rec.Headers = append(rec.Headers, kmsg.Header{Key: classicHeader, Value: jg.AppendTo(nil)})
	}
	return rec
}

func wireAssignment(a consumergroup.Assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	for _, id := range a.Topics() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = id, a[id]
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

func fromWire(a kmsg.Assignment) consumergroup.Assignment {
	out := consumergroup.Assignment{}
	for _, tp := range a.TopicPartitions {
		if len(tp.Partitions) > 0 {
			out[tp.TopicID] = slices.Clone(tp.Partitions)
		}
	}
	return out
}

func compareIDs(x, y consumergroup.TopicID) int { return slices.Compare(x[:], y[:]) }

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// header returns r's header key's value; false if it has none.
func header(r kmsg.Record, key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// topicsHash is the header of a group's subscribed topics' hash, as kbin
// writes an int64.
func topicsHash(h uint64) kmsg.Header {
	return kmsg.Header{Key: topicsHashHeader, Value: kbin.AppendInt64(nil, int64(h))}
}

// readTopicsHash reads r's topics hash header; 0 if it has none.
func readTopicsHash(r kmsg.Record) (uint64, error) {
	h, ok := header(r, topicsHashHeader)
	if !ok {
		return 0, nil
	}
	b := kbin.Reader{Src: h}
	v := uint64(b.Int64())
	return v, b.Complete()
}

// decodeConsumerGroup reads a group's record: its metadata, nil for a
// tombstone.
func decodeConsumerGroup(r kmsg.Record) (string, *consumergroup.StoredGroup, error) {
	g, tombstone, err := readGroupKey(r, "consumer")
	if err != nil || tombstone {
		return g, nil, err
	}
	v := kmsg.NewConsumerGroupDescribeResponse()
	v.Version = describeVersion
	if err := v.ReadFrom(r.Value); err != nil || len(v.Groups) != 1 || v.Groups[0].Group != g {
		return "", nil, fmt.Errorf("%w: consumer group %q's value (%v)", ErrRecord, g, err)
	}
	dg := v.Groups[0]
	sg := &consumergroup.StoredGroup{Group: g, Epoch: dg.Epoch, TargetEpoch: dg.AssignmentEpoch, Assignor: dg.AssignorName}
	if sg.TopicsHash, err = readTopicsHash(r); err != nil {
		return "", nil, fmt.Errorf("%w: consumer group %q's topics hash: %v", ErrRecord, g, err)
	}
	return g, sg, nil
}

// decodeConsumerMember reads a member's record: its group, its id and
// the member, nil for a tombstone.
func decodeConsumerMember(r kmsg.Record) (g, id string, sm *consumergroup.StoredMember, err error) {
	g, id, tombstone, err := readMemberKey(r, "consumer")
	if err != nil || tombstone {
		return g, id, nil, err
	}
	bad := func(what string, err error) error {
		return fmt.Errorf("%w: consumer group %q member %q's %s (%v)", ErrRecord, g, id, what, err)
	}
	v := kmsg.NewConsumerGroupDescribeResponse()
	v.Version = describeVersion
	if err := v.ReadFrom(r.Value); err != nil || len(v.Groups) != 1 || len(v.Groups[0].Members) != 1 ||
		v.Groups[0].Group != g || v.Groups[0].Members[0].MemberID != id {
		return "", "", nil, bad("value", err)
	}
	dm := v.Groups[0].Members[0]
	sm = &consumergroup.StoredMember{MemberID: id, InstanceID: orEmpty(dm.InstanceID), RackID: orEmpty(dm.RackID),
		ClientID: dm.ClientID, ClientHost: dm.ClientHost, Names: dm.SubscribedTopics, Regex: orEmpty(dm.SubscribedTopicRegex),
		Epoch: dm.MemberEpoch, PrevEpoch: dm.MemberEpoch, Assigned: fromWire(dm.Assignment), Target: fromWire(dm.TargetAssignment),
		Revoking: consumergroup.Assignment{}, Since: map[consumergroup.TopicID]map[int32]int32{}}
	if sm.Names == nil {
		sm.Names = []string{}
	}
	hv, ok := header(r, heartbeatHeader)
	if !ok {
		return "", "", nil, bad("heartbeat", fmt.Errorf("missing"))
	}
	hb := kmsg.NewConsumerGroupHeartbeatRequest()
	hb.Version = heartbeatVersion
	if err := hb.ReadFrom(hv); err != nil {
		return "", "", nil, bad("heartbeat", err)
	}
	sm.Left = hb.MemberEpoch == consumergroup.StaticLeaveEpoch
	sm.RebalanceTimeout = time.Duration(hb.RebalanceTimeoutMillis) * time.Millisecond
	sm.Assignor = orEmpty(hb.ServerAssignor)
	for _, t := range hb.Topics {
		if len(t.Partitions) > 0 {
			sm.Revoking[t.TopicID] = slices.Clone(t.Partitions)
		}
	}
	if cv, ok := header(r, classicHeader); ok {
		jg := kmsg.NewJoinGroupRequest()
		jg.Version = classicVersion
		if err := jg.ReadFrom(cv); err != nil {
			return "", "", nil, bad("classic metadata", err)
		}
		sm.Classic = &consumergroup.ClassicMember{SessionTimeout: time.Duration(jg.SessionTimeoutMillis) * time.Millisecond}
		for _, p := range jg.Protocols {
			sm.Classic.Protocols = append(sm.Classic.Protocols, consumergroup.ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
		}
	}
	if ev, ok := header(r, epochsHeader); ok {
		ep := kmsg.NewOffsetCommitRequest()
		ep.Version = epochsVersion
		if err := ep.ReadFrom(ev); err != nil {
			return "", "", nil, bad("epochs", err)
		}
		sm.PrevEpoch = ep.Generation
		for _, t := range ep.Topics {
			ps := make(map[int32]int32, len(t.Partitions))
			for _, p := range t.Partitions {
				ps[p.Partition] = p.LeaderEpoch
			}
			sm.Since[t.TopicID] = ps
		}
	}
	return g, id, sm, nil
}

// ConsumerGroups returns the consumer groups replayed, by name, each with
// its members by id. A group whose members' records outlived its own (no
// writer leaves that) comes back at epoch 0. O(members and partitions).
func (r *Replay) ConsumerGroups() []consumergroup.StoredGroup {
	return r.consumers.groups(func(name string, meta *consumergroup.StoredGroup, members []consumergroup.StoredMember) consumergroup.StoredGroup {
		sg := consumergroup.StoredGroup{Group: name}
		if meta != nil {
			sg = *meta
		}
		sg.Members = members
		return sg
	})
}

// consumerRecords adds the live consumer group records, group by group in
// name order, each group's metadata before its members.
func (r *Replay) consumerRecords(add func(kmsg.Record)) {
	r.consumers.records(add, consumerGroupRecord, consumerMemberRecord)
}
