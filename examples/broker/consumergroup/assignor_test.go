package consumergroup

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkAssignment checks that every partition of every subscribed topic is
// assigned once, to a member that subscribes to it.
func checkAssignment(t *testing.T, members []MemberSpec, topics map[string]TopicMeta, got map[string]Assignment) {
	t.Helper()
	seen := map[TopicID]map[int32]string{}
	for _, m := range members {
		for id, ps := range got[m.ID] {
			var name string
			for _, tm := range topics {
				if tm.ID == id {
					name = tm.Name
				}
			}
			assert.Contains(t, m.Topics, name, "member %s got a topic it does not subscribe to", m.ID)
			for _, p := range ps {
				if seen[id] == nil {
					seen[id] = map[int32]string{}
				}
				assert.Empty(t, seen[id][p], "partition %s/%d given twice", name, p)
				seen[id][p] = m.ID
			}
		}
	}
	for name, tm := range topics {
		subscribed := false
		for _, m := range members {
			for _, s := range m.Topics {
				subscribed = subscribed || s == name
			}
		}
		if subscribed {
			assert.Len(t, seen[tm.ID], int(tm.Partitions), "every partition of %s assigned", name)
		}
	}
}

func TestUniformAssignor(t *testing.T) {
	a := TopicMeta{Name: "a", ID: TopicID{1}, Partitions: 7}
	b := TopicMeta{Name: "b", ID: TopicID{2}, Partitions: 4}
	topics := map[string]TopicMeta{"a": a, "b": b}
	for _, tc := range []struct {
		name    string
		members []MemberSpec
	}{
		{"one member takes all", []MemberSpec{{ID: "m1", Topics: []string{"a", "b"}}}},
		{"homogeneous spread", []MemberSpec{
			{ID: "m1", Topics: []string{"a", "b"}}, {ID: "m2", Topics: []string{"a", "b"}}, {ID: "m3", Topics: []string{"a", "b"}},
		}},
		{"heterogeneous: b's only subscriber keeps it, a is balanced around it", []MemberSpec{
			{ID: "m1", Topics: []string{"a"}}, {ID: "m2", Topics: []string{"a", "b"}},
		}},
		{"sticky: a newcomer takes from the loaded", []MemberSpec{
			{ID: "m1", Topics: []string{"a"}, Target: Assignment{a.ID: {0, 1, 2, 3}}},
			{ID: "m2", Topics: []string{"a"}, Target: Assignment{a.ID: {4, 5, 6}}},
			{ID: "m3", Topics: []string{"a"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := UniformAssignor{}.Assign(tc.members, topics)
			checkAssignment(t, tc.members, topics, got)
			lo, hi := 1<<30, 0
			for _, m := range tc.members {
				lo, hi = min(lo, got[m.ID].count()), max(hi, got[m.ID].count())
			}
			assert.LessOrEqual(t, hi-lo, 1, "counts differ by at most one: %v", got)
			again := UniformAssignor{}.Assign(tc.members, topics)
			assert.Equal(t, got, again, "deterministic")
		})
	}

	t.Run("sticky keeps what stays balanced", func(t *testing.T) {
		prev := []MemberSpec{
			{ID: "m1", Topics: []string{"a"}, Target: Assignment{a.ID: {0, 1, 2, 3}}},
			{ID: "m2", Topics: []string{"a"}, Target: Assignment{a.ID: {4, 5, 6}}},
			{ID: "m3", Topics: []string{"a"}},
		}
		got := UniformAssignor{}.Assign(prev, topics)
		assert.True(t, got["m1"].subsetOf(prev[0].Target), "m1 only loses partitions: %v", got["m1"])
		assert.True(t, got["m2"].subsetOf(prev[1].Target), "m2 only loses partitions: %v", got["m2"])
	})
}

// TestUniformAssignorMatchesReference checks the uniform assignor, which
// works on member and partition indices, against referenceUniform, the
// same algorithm on maps of names as it was first written: the same
// members, subscriptions, targets and topics give the same assignment.
// The groups are random (a fixed seed), homogeneous and heterogeneous,
// grown a member at a time and shrunk, each assignment the next's
// targets, with topics that grow, shrink and go away.
func TestUniformAssignorMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(848, 1))
	for round := range 60 {
		topics := map[string]TopicMeta{}
		var names []string
		for i := range 1 + rng.IntN(4) {
			name := fmt.Sprintf("t%d", i)
			names = append(names, name)
			topics[name] = TopicMeta{Name: name, ID: TopicID{byte(i + 1)}, Partitions: int32(rng.IntN(40))}
		}
		homogeneous := round%2 == 0
		var members []MemberSpec
		var target map[string]Assignment
		for step := range 25 {
			switch r := rng.IntN(10); {
			case r < 6 || len(members) == 0: // one more member
				m := MemberSpec{ID: fmt.Sprintf("m%03d", rng.IntN(1000))}
				if slices.ContainsFunc(members, func(o MemberSpec) bool { return o.ID == m.ID }) {
					continue
				}
				for _, name := range names {
					if homogeneous || rng.IntN(2) == 0 {
						m.Topics = append(m.Topics, name)
					}
				}
				members = append(members, m)
				slices.SortFunc(members, func(a, b MemberSpec) int { return cmp.Compare(a.ID, b.ID) })
			case r < 8: // one fewer
				i := rng.IntN(len(members))
				members = slices.Delete(members, i, i+1)
			default: // a topic grows, shrinks or goes away
				name := names[rng.IntN(len(names))]
				if rng.IntN(4) == 0 {
					delete(topics, name)
				} else {
					tm := topics[name]
					tm.Name, tm.ID, tm.Partitions = name, TopicID{byte(slices.Index(names, name) + 1)}, int32(rng.IntN(40))
					topics[name] = tm
				}
			}
			for i := range members {
				members[i].Target = target[members[i].ID]
			}
			want := referenceUniform(members, topics)
			got := UniformAssignor{}.Assign(members, topics)
			require.Equal(t, want, got, "round %d, step %d: %d members", round, step, len(members))
			target = got
		}
	}
}

// TestUniformAssignorKeepsUnchangedTargets checks that a member joining a
// group of 100 moves the targets of a few and costs allocations for
// them, not for all: the members that keep their target are answered it
// as it was, the same map, as the coordinator computes a target at every
// join.
func TestUniformAssignorKeepsUnchangedTargets(t *testing.T) {
	topic := TopicMeta{Name: "a", ID: TopicID{1}, Partitions: 200}
	topics := map[string]TopicMeta{"a": topic}
	members := make([]MemberSpec, 100)
	for i := range members {
		members[i] = MemberSpec{ID: fmt.Sprintf("m%03d", i), Topics: []string{"a"},
			Target: Assignment{topic.ID: {int32(2 * i), int32(2*i + 1)}}}
	}
	members = append(members, MemberSpec{ID: "m100", Topics: []string{"a"}})
	got := UniformAssignor{}.Assign(members, topics)
	checkAssignment(t, members, topics, got)
	require.Equal(t, referenceUniform(members, topics), got, "as the map version")
	assert.Equal(t, 1, got["m100"].count(), "the newcomer takes one: 99 members keep two, two have one")
	same := 0
	for _, m := range members[:100] {
		if got[m.ID].count() == 2 {
			assert.Equal(t, reflect.ValueOf(m.Target).UnsafePointer(), reflect.ValueOf(got[m.ID]).UnsafePointer(),
				"%s keeps its target, answered as it was", m.ID)
			same++
		}
	}
	assert.Equal(t, 99, same)
	allocs := testing.AllocsPerRun(10, func() { UniformAssignor{}.Assign(members, topics) })
	assert.LessOrEqual(t, allocs, 30.0, "allocations of a join's target: for the two members it changed, not a map each")
}

func TestRangeAssignor(t *testing.T) {
	a := TopicMeta{Name: "a", ID: TopicID{1}, Partitions: 5}
	b := TopicMeta{Name: "b", ID: TopicID{2}, Partitions: 5}
	topics := map[string]TopicMeta{"a": a, "b": b}
	members := []MemberSpec{{ID: "m1", Topics: []string{"a", "b"}}, {ID: "m2", Topics: []string{"a", "b"}}}
	got := RangeAssignor{}.Assign(members, topics)
	checkAssignment(t, members, topics, got)
	assert.Equal(t, Assignment{a.ID: {0, 1, 2}, b.ID: {0, 1, 2}}, got["m1"], "the first member takes the extra partition of each topic")
	assert.Equal(t, Assignment{a.ID: {3, 4}, b.ID: {3, 4}}, got["m2"], "co-partitioned ranges")

	many := make([]MemberSpec, 7)
	for i := range many {
		many[i] = MemberSpec{ID: fmt.Sprintf("m%d", i), Topics: []string{"a"}}
	}
	got = RangeAssignor{}.Assign(many, topics)
	checkAssignment(t, many, topics, got)
	assert.Equal(t, 0, got["m6"].count(), "more members than partitions: the last get none")
}
