package records

// The records of KIP-932 share groups' membership (package sharegroup), in
// this broker's own format, as consumer.go's for KIP-848's groups.
//
// Kafka writes a share group as ShareGroupMetadata (its epoch and topics'
// metadata hash), ShareGroupMemberMetadata (a member's rack, client and
// subscription), ShareGroupTargetAssignmentMetadata/Member (the target's
// epoch, each member's target) and ShareGroupCurrentMemberAssignment (a
// member's epoch and partitions) records (key versions 9 to 13 of this
// topic), which kmsg does not have. So each record is made of kmsg's
// messages of the share group RPCs, at fixed versions, under key versions
// Kafka does not use:
//
//   - a group: key GroupMetadataKey at version 932 (the group id); value a
//     ShareGroupDescribeResponse version 1 of the one group, without
//     members: its epoch and its target assignment's epoch; header
//     "topics-hash", the hash of its subscribed topics as kbin writes an
//     int64.
//   - a member: key OffsetCommitKey at version 933 whose topic is the
//     member id and partition 0; value a ShareGroupDescribeResponse
//     version 1 of the group with that one member as it describes it
//     (rack, client id and host, its epoch, subscription and assigned
//     partitions); header "target", a ShareGroupHeartbeatResponse version
//     1 whose assignment is its target assignment.
//   - a null value: the member left or was fenced, or the group is gone
//     (its members with it).
//
// Kafka's ShareGroupStatePartitionMetadata (which topics' share-partition
// state the group has initialized) is not written: the share partitions'
// state is kept by the share coordinator (package sharestate), which
// initializes a share partition's state when its leader first needs it.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
)

const (
	shareGroupKeyVersion  = 932
	shareMemberKeyVersion = 933

	shareDescribeVersion  = 1 // ShareGroupDescribeResponse's
	shareHeartbeatVersion = 1 // ShareGroupHeartbeatResponse's

	targetHeader = "target"
)

var shareKeys = membershipKeys{shareGroupKeyVersion, shareMemberKeyVersion}

// ShareGroup returns the records of ch, in the order they apply: the
// group's metadata, its members changed, its members removed, and the
// group's tombstone if it is gone.
func ShareGroup(ch sharegroup.Change) []kmsg.Record {
	return changeRecords(ch, shareKeys, shareGroupRecord, shareMemberRecord)
}

// shareGroupRecord is the record of sg's metadata.
func shareGroupRecord(sg *sharegroup.StoredGroup) kmsg.Record {
	v := kmsg.NewShareGroupDescribeResponse()
	v.Version = shareDescribeVersion
	dg := kmsg.NewShareGroupDescribeResponseGroup()
	dg.GroupID, dg.GroupEpoch, dg.AssignmentEpoch = sg.Group, sg.Epoch, sg.TargetEpoch
	v.Groups = append(v.Groups, dg)
	return kmsg.Record{Key: shareKeys.groupKey(sg.Group), Value: v.AppendTo(nil), Headers: []kmsg.Header{topicsHash(sg.TopicsHash)}}
}

// shareMemberRecord is the record of member sm of group g.
func shareMemberRecord(g string, sm *sharegroup.StoredMember) kmsg.Record {
	v := kmsg.NewShareGroupDescribeResponse()
	v.Version = shareDescribeVersion
	dg := kmsg.NewShareGroupDescribeResponseGroup()
	dg.GroupID = g
	dm := kmsg.NewShareGroupDescribeResponseGroupMember()
	dm.MemberID, dm.RackID, dm.MemberEpoch = sm.MemberID, nilIfEmpty(sm.RackID), sm.Epoch
	dm.ClientID, dm.ClientHost, dm.SubscribedTopicNames = sm.ClientID, sm.ClientHost, sm.Topics
	for _, id := range slices.SortedFunc(maps.Keys(sm.Assigned), compareIDs) {
		tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = id, sm.Assigned[id]
		dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
	}
	dg.Members = append(dg.Members, dm)
	v.Groups = append(v.Groups, dg)

	target := kmsg.NewShareGroupHeartbeatResponse()
	target.Version, target.MemberID, target.MemberEpoch = shareHeartbeatVersion, &sm.MemberID, sm.Epoch
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	for _, id := range slices.SortedFunc(maps.Keys(sm.Target), compareIDs) {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = id, sm.Target[id]
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	target.Assignment = &a
	return kmsg.Record{Key: shareKeys.memberKey(g, sm.MemberID), Value: v.AppendTo(nil), Headers: []kmsg.Header{
		{Key: targetHeader, Value: target.AppendTo(nil)},
	}}
}

// decodeShareGroup reads a share group's record: its metadata, nil for a
// tombstone.
func decodeShareGroup(r kmsg.Record) (string, *sharegroup.StoredGroup, error) {
	g, tombstone, err := readGroupKey(r, "share")
	if err != nil || tombstone {
		return g, nil, err
	}
	v := kmsg.NewShareGroupDescribeResponse()
	v.Version = shareDescribeVersion
	if err := v.ReadFrom(r.Value); err != nil || len(v.Groups) != 1 || v.Groups[0].GroupID != g {
		return "", nil, fmt.Errorf("%w: share group %q's value (%v)", ErrRecord, g, err)
	}
	sg := &sharegroup.StoredGroup{Group: g, Epoch: v.Groups[0].GroupEpoch, TargetEpoch: v.Groups[0].AssignmentEpoch}
	if sg.TopicsHash, err = readTopicsHash(r); err != nil {
		return "", nil, fmt.Errorf("%w: share group %q's topics hash: %v", ErrRecord, g, err)
	}
	return g, sg, nil
}

// decodeShareMember reads a share group member's record: its group, its
// id and the member, nil for a tombstone.
func decodeShareMember(r kmsg.Record) (g, id string, sm *sharegroup.StoredMember, err error) {
	g, id, tombstone, err := readMemberKey(r, "share")
	if err != nil || tombstone {
		return g, id, nil, err
	}
	bad := func(what string, err error) error {
		return fmt.Errorf("%w: share group %q member %q's %s (%v)", ErrRecord, g, id, what, err)
	}
	v := kmsg.NewShareGroupDescribeResponse()
	v.Version = shareDescribeVersion
	if err := v.ReadFrom(r.Value); err != nil || len(v.Groups) != 1 || len(v.Groups[0].Members) != 1 ||
		v.Groups[0].GroupID != g || v.Groups[0].Members[0].MemberID != id {
		return "", "", nil, bad("value", err)
	}
	dm := v.Groups[0].Members[0]
	sm = &sharegroup.StoredMember{MemberID: id, RackID: orEmpty(dm.RackID), ClientID: dm.ClientID, ClientHost: dm.ClientHost,
		Topics: dm.SubscribedTopicNames, Epoch: dm.MemberEpoch, Assigned: sharegroup.Assignment{}, Target: sharegroup.Assignment{}}
	if sm.Topics == nil {
		sm.Topics = []string{}
	}
	for _, tp := range dm.Assignment.TopicPartitions {
		if len(tp.Partitions) > 0 {
			sm.Assigned[tp.TopicID] = slices.Clone(tp.Partitions)
		}
	}
	hv, ok := header(r, targetHeader)
	if !ok {
		return "", "", nil, bad("target", fmt.Errorf("missing"))
	}
	target := kmsg.NewShareGroupHeartbeatResponse()
	target.Version = shareHeartbeatVersion
	if err := target.ReadFrom(hv); err != nil {
		return "", "", nil, bad("target", err)
	}
	if target.Assignment != nil {
		for _, tp := range target.Assignment.TopicPartitions {
			if len(tp.Partitions) > 0 {
				sm.Target[tp.TopicID] = slices.Clone(tp.Partitions)
			}
		}
	}
	return g, id, sm, nil
}

// ShareGroups returns the share groups replayed, by name, each with
// its members by id. A group whose members' records outlived its own (no
// writer leaves that) comes back at epoch 0. O(members and partitions).
func (r *Replay) ShareGroups() []sharegroup.StoredGroup {
	return r.shares.groups(func(name string, meta *sharegroup.StoredGroup, members []sharegroup.StoredMember) sharegroup.StoredGroup {
		sg := sharegroup.StoredGroup{Group: name}
		if meta != nil {
			sg = *meta
		}
		sg.Members = members
		return sg
	})
}

// shareRecords adds the live share group records, group by group in
// name order, each group's metadata before its members.
func (r *Replay) shareRecords(add func(kmsg.Record)) {
	r.shares.records(add, shareGroupRecord, shareMemberRecord)
}
