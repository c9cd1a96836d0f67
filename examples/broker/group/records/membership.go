package records

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// membershipKeys are the key versions of one kind of group's records: the
// group's (a GroupMetadataKey) and each member's (an OffsetCommitKey whose
// topic is the member id).
type membershipKeys struct{ group, member int16 }

func (v membershipKeys) groupKey(g string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = v.group, g
	return k.AppendTo(nil)
}

func (v membershipKeys) memberKey(g, member string) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic = v.member, g, member
	return k.AppendTo(nil)
}

// changeRecords returns the records of ch, in the order they apply: the
// group's metadata (group's record of it), its members changed
// (member's), its members removed, and the group's tombstone if it is
// gone.
func changeRecords[G, M any](ch groupstore.Change[G, M], keys membershipKeys, group func(*G) kmsg.Record,
	member func(string, *M) kmsg.Record) []kmsg.Record {
	var recs []kmsg.Record
	if ch.Meta != nil {
		recs = append(recs, group(ch.Meta))
	}
	for i := range ch.Members {
		recs = append(recs, member(ch.Group, &ch.Members[i]))
	}
	for _, id := range ch.Removed {
		recs = append(recs, kmsg.Record{Key: keys.memberKey(ch.Group, id)})
	}
	if ch.Deleted {
		recs = append(recs, kmsg.Record{Key: keys.groupKey(ch.Group)})
	}
	return recs
}

// readGroupKey reads a group record's key: the group's name, and whether
// the record is its tombstone. kind names the group's kind in errors.
func readGroupKey(r kmsg.Record, kind string) (g string, tombstone bool, err error) {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", false, fmt.Errorf("%w: a %s group's key: %v", ErrRecord, kind, err)
	}
	return k.Group, r.Value == nil, nil
}

// readMemberKey reads a member record's key: its group, its id, and
// whether the record is its tombstone.
func readMemberKey(r kmsg.Record, kind string) (g, id string, tombstone bool, err error) {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", "", false, fmt.Errorf("%w: a %s group member's key: %v", ErrRecord, kind, err)
	}
	return k.Group, k.Topic, r.Value == nil, nil
}

// memberships is what the records of one kind of coordinator-computed
// group add up to (KIP-848's consumer groups, consumer.go; KIP-932's
// share groups, share.go): by group name, its metadata G, nil while no
// group record is live, and its members M by id. Both kinds are written
// alike, a record for the group and one per member, a tombstone of the
// group taking its members with it; the zero value is empty and ready.
type memberships[G, M any] map[string]*membership[G, M]

type membership[G, M any] struct {
	meta    *G
	members map[string]*M
}

func (ms *membership[G, M]) live() int64 {
	n := int64(len(ms.members))
	if ms.meta != nil {
		n++
	}
	return n
}

// setGroup applies group g's record: its metadata, or its tombstone
// (nil), which drops its members too. It returns the change in the
// number of live records.
func (all *memberships[G, M]) setGroup(g string, meta *G) int64 {
	return all.change(g, func(ms *membership[G, M]) {
		ms.meta = meta
		if meta == nil {
			clear(ms.members)
		}
	})
}

// setMember applies member id's record in group g: the member, or its
// tombstone (nil). It returns the change in the number of live records.
func (all *memberships[G, M]) setMember(g, id string, m *M) int64 {
	return all.change(g, func(ms *membership[G, M]) {
		if m == nil {
			delete(ms.members, id)
		} else {
			ms.members[id] = m
		}
	})
}

func (all *memberships[G, M]) change(g string, change func(*membership[G, M])) int64 {
	if *all == nil {
		*all = make(memberships[G, M])
	}
	ms := (*all)[g]
	if ms == nil {
		ms = &membership[G, M]{members: map[string]*M{}}
		(*all)[g] = ms
	}
	before := ms.live()
	change(ms)
	if ms.meta == nil && len(ms.members) == 0 {
		delete(*all, g)
	}
	return ms.live() - before
}

// applyRecord applies one record, the group's (decoded by group) if
// isGroup, else a member's (decoded by member), and returns the change in
// the number of live records.
func (all *memberships[G, M]) applyRecord(rec kmsg.Record, isGroup bool, group func(kmsg.Record) (string, *G, error),
	member func(kmsg.Record) (string, string, *M, error)) (int64, error) {
	if isGroup {
		name, meta, err := group(rec)
		if err != nil {
			return 0, err
		}
		return all.setGroup(name, meta), nil
	}
	name, id, m, err := member(rec)
	if err != nil {
		return 0, err
	}
	return all.setMember(name, id, m), nil
}

// each calls f with each group in name order: its metadata (nil if only
// its members' records are live, which no writer leaves) and its members
// in id order. O(groups × members).
func (all memberships[G, M]) each(f func(name string, meta *G, members []*M)) {
	for _, name := range slices.Sorted(maps.Keys(all)) {
		ms := all[name]
		members := make([]*M, 0, len(ms.members))
		for _, id := range slices.Sorted(maps.Keys(ms.members)) {
			members = append(members, ms.members[id])
		}
		f(name, ms.meta, members)
	}
}

// groups returns the groups in name order, each as build makes it of its
// name, its metadata (nil: none live) and its members in id order.
func (all memberships[G, M]) groups(build func(name string, meta *G, members []M) G) []G {
	out := make([]G, 0, len(all))
	all.each(func(name string, meta *G, members []*M) {
		ms := make([]M, len(members))
		for i, m := range members {
			ms[i] = *m
		}
		out = append(out, build(name, meta, ms))
	})
	return out
}

// records adds the live records, group by group in name order, each
// group's metadata (group's record of it) before its members (member's).
func (all memberships[G, M]) records(add func(kmsg.Record), group func(*G) kmsg.Record, member func(string, *M) kmsg.Record) {
	all.each(func(name string, meta *G, members []*M) {
		if meta != nil {
			add(group(meta))
		}
		for _, m := range members {
			add(member(name, m))
		}
	})
}
