package consumergroup

import "slices"

// referenceUniform is the uniform assignor as first written, on maps of
// member and topic names: O(P·M) map lookups a pass. The assignor must
// give what it gives.
func referenceUniform(members []MemberSpec, topics map[string]TopicMeta) map[string]Assignment {
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
