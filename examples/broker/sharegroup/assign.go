package sharegroup

import (
	"maps"
	"slices"
)

// assignLocked computes g's target assignment at its epoch with the simple
// assignor (doc.go), topic by topic over the members subscribed to each.
// REQUIRES: c.mu held.
func (c *Coordinator) assignLocked(g *group) {
	target := make(map[string]Assignment, len(g.members))
	ids := slices.Sorted(maps.Keys(g.members))
	for _, id := range ids {
		target[id] = Assignment{}
	}
	for _, name := range slices.Sorted(maps.Keys(g.topics)) {
		info := g.topics[name]
		var subs []string
		for _, id := range ids {
			if _, ok := slices.BinarySearch(g.members[id].topics, name); ok {
				subs = append(subs, id)
			}
		}
		for _, id := range subs {
			target[id][info.ID] = nil
		}
		assignTopic(target, subs, info)
	}
	// A topic a member subscribes to but was given no partition of is
	// left out of its assignment rather than listed empty.
	for _, a := range target {
		for id, ps := range a {
			if len(ps) == 0 {
				delete(a, id)
			}
		}
	}
	g.target, g.targetEpoch = target, g.epoch
}

// assignTopic spreads one topic's partitions over subs, in id order: every
// member gets one when they are at least as many as the partitions (a
// partition is then shared), else each partition goes to one member.
func assignTopic(target map[string]Assignment, subs []string, info TopicInfo) {
	n, m := int(info.Partitions), len(subs)
	if n == 0 || m == 0 {
		return
	}
	if m >= n {
		for i, id := range subs {
			target[id][info.ID] = append(target[id][info.ID], int32(i%n))
		}
		return
	}
	for p := range n {
		id := subs[p%m]
		target[id][info.ID] = append(target[id][info.ID], int32(p))
	}
}
