package consumergroup

import (
	"maps"
	"slices"
)

// TopicID is a topic's 16-byte id (Kafka's Uuid): KIP-848 names a
// member's partitions by topic id, so that a topic deleted and created
// again under the same name is not mistaken for the old one.
type TopicID = [16]byte

// Assignment is a set of partitions by topic id, each topic's partitions
// sorted and without duplicates. A nil Assignment is "not given" where a
// request may leave it out (a heartbeat's owned partitions); an empty one
// is "none".
type Assignment map[TopicID][]int32

// clone returns a deep copy of a, nil for nil.
func (a Assignment) clone() Assignment {
	if a == nil {
		return nil
	}
	c := make(Assignment, len(a))
	for id, ps := range a {
		c[id] = slices.Clone(ps)
	}
	return c
}

// count is the number of partitions in a.
func (a Assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// has reports whether a holds partition p of topic id. O(log n).
func (a Assignment) has(id TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

// add puts partition p of topic id in a, keeping the order.
func (a Assignment) add(id TopicID, p int32) {
	ps := a[id]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		a[id] = slices.Insert(ps, i, p)
	}
}

// equal reports whether a and b hold the same partitions (nil and empty
// are equal).
func (a Assignment) equal(b Assignment) bool {
	if a.count() != b.count() {
		return false
	}
	for id, ps := range a {
		if len(ps) > 0 && !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// overlaps reports whether a and b share a partition.
func (a Assignment) overlaps(b Assignment) bool {
	for id, ps := range a {
		for _, p := range ps {
			if b.has(id, p) {
				return true
			}
		}
	}
	return false
}

// subsetOf reports whether every partition of a is in b.
func (a Assignment) subsetOf(b Assignment) bool {
	for id, ps := range a {
		for _, p := range ps {
			if !b.has(id, p) {
				return false
			}
		}
	}
	return true
}

// normalize sorts each topic's partitions, drops duplicates and empty
// topics: a request's owned partitions come in the client's order.
func (a Assignment) normalize() Assignment {
	if a == nil {
		return nil
	}
	out := make(Assignment, len(a))
	for id, ps := range a {
		if len(ps) == 0 {
			continue
		}
		ps = slices.Clone(ps)
		slices.Sort(ps)
		out[id] = slices.Compact(ps)
	}
	return out
}

// topicIDs returns the topics of a and b, in a fixed order.
func topicIDs(a, b Assignment) []TopicID {
	ids := slices.Collect(maps.Keys(a))
	for id := range b {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y TopicID) int { return slices.Compare(x[:], y[:]) })
	return ids
}

// Topics returns a's topics, in a fixed order (by id), for an answer
// that lists them.
func (a Assignment) Topics() []TopicID { return topicIDs(a, nil) }
