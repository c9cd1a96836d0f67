package offsetlog

import (
	"cmp"
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

// state is what the log's records add up to: the latest value of each key.
// It is what Load returns and what a compaction writes.
type state struct {
	groups map[string]*groupState
	live   int64 // records a compaction would write
}

type groupState struct {
	ptype   string // "" when no group record is live
	offsets map[group.TopicPartition]group.StoredOffset
}

func newState() state { return state{groups: make(map[string]*groupState)} }

// get returns g's state, made if need be.
func (s *state) get(g string) *groupState {
	gs := s.groups[g]
	if gs == nil {
		gs = &groupState{offsets: make(map[group.TopicPartition]group.StoredOffset)}
		s.groups[g] = gs
	}
	return gs
}

// apply applies one record's change, keeping live.
func (s *state) apply(c change) {
	gs := s.get(c.group)
	switch {
	case c.isOffset && c.deleted:
		if _, ok := gs.offsets[c.tp]; ok {
			delete(gs.offsets, c.tp)
			s.live--
		}
	case c.isOffset:
		if _, ok := gs.offsets[c.tp]; !ok {
			s.live++
		}
		gs.offsets[c.tp] = c.offset
	case c.deleted || c.ptype == "":
		if gs.ptype != "" {
			gs.ptype = ""
			s.live--
		}
	default:
		if gs.ptype == "" {
			s.live++
		}
		gs.ptype = c.ptype
	}
	if gs.ptype == "" && len(gs.offsets) == 0 {
		delete(s.groups, c.group)
	}
}

// sortedGroups returns the group names in order.
func (s *state) sortedGroups() []string {
	names := make([]string, 0, len(s.groups))
	for g := range s.groups {
		names = append(names, g)
	}
	slices.Sort(names)
	return names
}

// sortedOffsets returns gs's offsets by topic and partition.
func (gs *groupState) sortedOffsets() []group.StoredOffset {
	out := make([]group.StoredOffset, 0, len(gs.offsets))
	for _, o := range gs.offsets {
		out = append(out, o)
	}
	slices.SortFunc(out, func(x, y group.StoredOffset) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out
}
