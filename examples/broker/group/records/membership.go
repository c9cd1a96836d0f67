package records

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	return all.apply(g, func(ms *membership[G, M]) {
		ms.meta = meta
		if meta == nil {
			clear(ms.members)
		}
	})
}

// setMember applies member id's record in group g: the member, or its
// tombstone (nil). It returns the change in the number of live records.
func (all *memberships[G, M]) setMember(g, id string, m *M) int64 {
	return all.apply(g, func(ms *membership[G, M]) {
		if m == nil {
			delete(ms.members, id)
		} else {
			ms.members[id] = m
		}
	})
}

func (all *memberships[G, M]) apply(g string, change func(*membership[G, M])) int64 {
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
