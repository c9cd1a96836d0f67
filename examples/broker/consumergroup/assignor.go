package consumergroup

import (
	"cmp"
	"slices"
)

// The assignors run on the coordinator (KIP-848's server-side assignment):
// a member names one (ConsumerGroupHeartbeat's ServerAssignor) among those
// the broker offers (group.consumer.assignors, the first the default), and
// the group uses the one most of its members name. Both are deterministic:
// the same members, subscriptions and topics give the same assignment, so
// that a coordinator that computes it again after a failover finds what
// its predecessor had.

// TopicMeta is a topic as an assignor sees it.
type TopicMeta struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// MemberSpec is a member as an assignor sees it: the topics it subscribes
// to that exist, sorted, and its target assignment so far, which a sticky
// assignor keeps where it can.
type MemberSpec struct {
	ID     string
	Topics []string
	Target Assignment
}

// An Assignor computes a group's target assignment (Kafka's
// ConsumerGroupPartitionAssignor). Assign returns every member's
// partitions, by member id; each partition of a subscribed topic goes to
// exactly one member that subscribes to it. members are sorted by id. A
// member's answer may be its Target itself, when it is unchanged: neither
// is written once given.
type Assignor interface {
	Name() string
	Assign(members []MemberSpec, topics map[string]TopicMeta) map[string]Assignment
}

// Assignors returns the assignors the broker knows, by name.
func Assignors() map[string]Assignor {
	return map[string]Assignor{UniformAssignor{}.Name(): UniformAssignor{}, RangeAssignor{}.Name(): RangeAssignor{}}
}

// UniformAssignor spreads the partitions of the subscribed topics evenly
// over the members that subscribe to them, keeping each partition with
// its current owner where that stays balanced (Kafka's UniformAssignor,
// its "uniform" name): members' counts differ by at most one among those
// that could take each other's partitions.
//
// It keeps the partitions it can (every target partition whose member
// still subscribes), gives the others to the least loaded member that
// subscribes, then moves partitions from a member to one that has two
// fewer and subscribes, until none can move. Each move lowers the sum of
// the squared counts, so it ends; a pass over P partitions and M members
// is O(P + moves·M), the least loaded member looked for again only after
// a move. The coordinator runs it at every join and leave, so it works on
// slices indexed by member and partition, never on maps.
type UniformAssignor struct{}

// Name is "uniform", Kafka's name.
func (UniformAssignor) Name() string { return "uniform" }

// Assign implements Assignor.
func (UniformAssignor) Assign(members []MemberSpec, topics map[string]TopicMeta) map[string]Assignment {
	// Members are their index in members, topics theirs in names;
	// owners[k][p] is the member partition p of names[k] goes to, -1
	// while it has none.
	load := make([]int, len(members))
	subs := subscriberIndices(members)
	names := sortedTopics(topics, subs)
	owners := make([][]int, len(names))
	index := make(map[string]int, len(names))
	for k, name := range names {
		index[name] = k
		owners[k] = slices.Repeat([]int{-1}, int(topics[name].Partitions))
	}
	// least is the first of ms (a topic's subscribers, by id) with the
	// fewest partitions so far.
	least := func(ms []int) int {
		best := ms[0]
		for _, m := range ms[1:] {
			if load[m] < load[best] {
				best = m
			}
		}
		return best
	}
	assign := func(m int, owner *int) {
		if *owner >= 0 {
			load[*owner]--
		}
		*owner = m
		load[m]++
	}
	// 1. Stickiness: every partition its target member still may have.
	for i, m := range members {
		for _, name := range m.Topics {
			k, ok := index[name]
			if !ok {
				continue
			}
			for _, p := range m.Target[topics[name].ID] {
				if p >= 0 && int(p) < len(owners[k]) && owners[k][p] < 0 {
					assign(i, &owners[k][p])
				}
			}
		}
	}
	// 2. The others, each to the least loaded member that subscribes.
	for k, name := range names {
		for p := range owners[k] {
			if owners[k][p] < 0 {
				assign(least(subs[name]), &owners[k][p])
			}
		}
	}
	// 3. Balance: move a partition to a subscriber with two fewer. The
	// least loaded subscriber only changes with a move, so it is looked
	// for again only then: O(P + moves·M) a pass, not O(P·M).
	for moved := true; moved; {
		moved = false
		for k, name := range names {
			to := least(subs[name])
			for p := range owners[k] {
				if load[owners[k][p]] > load[to]+1 {
					assign(to, &owners[k][p])
					moved = true
					to = least(subs[name])
				}
			}
		}
	}
	// The answer. A member that ends with its target is answered its
	// Target itself, not a copy: at a join most members keep theirs, and
	// a map each was most of the assignor's allocations.
	byID := make(map[TopicID]int, len(names))
	for k, name := range names {
		byID[topics[name].ID] = k
	}
	out := make(map[string]Assignment, len(members))
	kept := make([]bool, len(members))
	for i, m := range members {
		if kept[i] = keepsTarget(m.Target, i, load[i], byID, owners); kept[i] {
			out[m.ID] = m.Target
		} else {
			out[m.ID] = Assignment{}
		}
	}
	for k, name := range names {
		id := topics[name].ID
		for p, m := range owners[k] {
			if !kept[m] {
				a := out[members[m].ID]
				a[id] = append(a[id], int32(p))
			}
		}
	}
	return out
}

// keepsTarget reports whether member i, given n partitions in owners
// (by topic, the topics' places in index), was given exactly target:
// each of its topics subscribed and not empty, its partitions sorted,
// once each, and i's. A nil target is not kept: the answer is never nil.
// O(target's partitions).
func keepsTarget(target Assignment, i, n int, index map[TopicID]int, owners [][]int) bool {
	if target == nil {
		return false
	}
	for id, ps := range target {
		k, ok := index[id]
		if !ok || len(ps) == 0 {
			return false
		}
		for j, p := range ps {
			if p < 0 || int(p) >= len(owners[k]) || owners[k][p] != i || j > 0 && ps[j-1] >= p {
				return false
			}
		}
		n -= len(ps)
	}
	return n == 0
}

// RangeAssignor gives each member a range of every topic it subscribes
// to (Kafka's RangeAssignor, "range"): a topic's subscribers, sorted by
// member id, take its partitions in order, the first P mod M one more
// than the others. Members that subscribe to the same co-partitioned
// topics get the same partition numbers of each, which joins need.
type RangeAssignor struct{}

// Name is "range", Kafka's name.
func (RangeAssignor) Name() string { return "range" }

// Assign implements Assignor.
func (RangeAssignor) Assign(members []MemberSpec, topics map[string]TopicMeta) map[string]Assignment {
	out, _ := emptyResult(members)
	subs := subscribers(members)
	for _, name := range sortedTopics(topics, subs) {
		t, ms := topics[name], subs[name]
		n, per, extra := int32(len(ms)), t.Partitions/int32(len(ms)), t.Partitions%int32(len(ms))
		next := int32(0)
		for i := range n {
			k := per
			if i < extra {
				k++
			}
			for p := next; p < next+k; p++ {
				out[ms[i]].add(t.ID, p)
			}
			next += k
		}
	}
	return out
}

// emptyResult returns an empty assignment and a zero count for each
// member.
func emptyResult(members []MemberSpec) (map[string]Assignment, map[string]int) {
	out := make(map[string]Assignment, len(members))
	load := make(map[string]int, len(members))
	for _, m := range members {
		out[m.ID], load[m.ID] = Assignment{}, 0
	}
	return out, load
}

// subscribers returns each topic's subscribers, in the members' order
// (by id).
func subscribers(members []MemberSpec) map[string][]string {
	subs := make(map[string][]string)
	for _, m := range members {
		for _, t := range m.Topics {
			subs[t] = append(subs[t], m.ID)
		}
	}
	return subs
}

// subscriberIndices is subscribers by the members' index in members.
func subscriberIndices(members []MemberSpec) map[string][]int {
	subs := make(map[string][]int)
	for i, m := range members {
		for _, t := range m.Topics {
			subs[t] = append(subs[t], i)
		}
	}
	return subs
}

// sortedTopics returns the names of the topics that exist and have a
// subscriber, sorted.
func sortedTopics[S any](topics map[string]TopicMeta, subs map[string]S) []string {
	var names []string
	for name := range subs {
		if _, ok := topics[name]; ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, cmp.Compare)
	return names
}
