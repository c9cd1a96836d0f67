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
// exactly one member that subscribes to it. members are sorted by id.
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
// the squared counts, so it ends; O(P·M) a pass over P partitions and M
// members.
type UniformAssignor struct{}

// Name is "uniform", Kafka's name.
func (UniformAssignor) Name() string { return "uniform" }

// Assign implements Assignor.
func (UniformAssignor) Assign(members []MemberSpec, topics map[string]TopicMeta) map[string]Assignment {
	out, load := emptyResult(members)
	subs := subscribers(members)
	type tp struct {
		id TopicID
		p  int32
	}
	owner := make(map[tp]string)
	assign := func(m string, t tp) {
		if prev, ok := owner[t]; ok {
			out[prev][t.id] = slices.DeleteFunc(out[prev][t.id], func(p int32) bool { return p == t.p })
			if len(out[prev][t.id]) == 0 {
				delete(out[prev], t.id)
			}
			load[prev]--
		}
		owner[t] = m
		out[m].add(t.id, t.p)
		load[m]++
	}
	// 1. Stickiness: every partition its target member still may have.
	for _, m := range members {
		for _, name := range m.Topics {
			t := topics[name]
			for _, p := range m.Target[t.ID] {
				if p < t.Partitions {
					if _, taken := owner[tp{t.ID, p}]; !taken {
						assign(m.ID, tp{t.ID, p})
					}
				}
			}
		}
	}
	// 2. The others, each to the least loaded member that subscribes.
	names := sortedTopics(topics, subs)
	least := func(ms []string) string {
		best := ms[0]
		for _, m := range ms[1:] {
			if load[m] < load[best] {
				best = m
			}
		}
		return best
	}
	for _, name := range names {
		t := topics[name]
		for p := range t.Partitions {
			if _, taken := owner[tp{t.ID, p}]; !taken {
				assign(least(subs[name]), tp{t.ID, p})
			}
		}
	}
	// 3. Balance: move a partition to a subscriber with two fewer.
	for moved := true; moved; {
		moved = false
		for _, name := range names {
			t := topics[name]
			for p := range t.Partitions {
				from, to := owner[tp{t.ID, p}], least(subs[name])
				if load[from] > load[to]+1 {
					assign(to, tp{t.ID, p})
					moved = true
				}
			}
		}
	}
	return out
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

// sortedTopics returns the names of the topics that exist and have a
// subscriber, sorted.
func sortedTopics(topics map[string]TopicMeta, subs map[string][]string) []string {
	var names []string
	for name := range subs {
		if _, ok := topics[name]; ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, cmp.Compare)
	return names
}
