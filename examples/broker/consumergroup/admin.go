package consumergroup

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is a consumer group as ConsumerGroupDescribe shows it.
type Description struct {
	Group           string
	State           State
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []MemberDescription
}

// MemberDescription is one member as ConsumerGroupDescribe shows it.
type MemberDescription struct {
	MemberID, InstanceID, RackID string
	ClientID, ClientHost         string
	MemberEpoch                  int32
	SubscribedNames              []string
	SubscribedRegex              string
	Assignment, Target           Assignment
}

// Describe returns group's description; false if it is not a consumer
// group here. O(members·partitions).
func (c *Coordinator) Describe(group string) (Description, bool) {
	g := c.lookup(group, false)
	if g == nil {
		return Description{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return Description{}, false
	}
	d := Description{Group: g.id, State: g.stateLocked(), Epoch: g.epoch, AssignmentEpoch: g.targetEpoch, Assignor: g.assignor}
	if d.Assignor == "" {
		d.Assignor = c.cfg.assignors[0]
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		epoch := m.epoch
		if m.left {
			epoch = StaticLeaveEpoch
		}
		d.Members = append(d.Members, MemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
			MemberEpoch: epoch, SubscribedNames: slices.Clone(m.names), SubscribedRegex: m.regex,
			Assignment: m.assigned.clone(), Target: g.target[id].clone(),
		})
	}
	return d, true
}

// Listing is a consumer group as ListGroups shows it.
type Listing struct {
	Group string
	State State
}

// List returns every consumer group here, sorted by id.
func (c *Coordinator) List() []Listing {
	c.mu.Lock()
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	var out []Listing
	for _, g := range gs {
		g.mu.Lock()
		if !g.gone {
			out = append(out, Listing{Group: g.id, State: g.stateLocked()})
		}
		g.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Listing) int {
		if a.Group < b.Group {
			return -1
		}
		if a.Group > b.Group {
			return 1
		}
		return 0
	})
	return out
}

// Has reports whether group is a consumer group here.
func (c *Coordinator) Has(group string) bool { return c.lookup(group, false) != nil }

// HasMembers reports whether group is a consumer group here with members:
// a classic member may not join it (INCONSISTENT_GROUP_PROTOCOL).
func (c *Coordinator) HasMembers(group string) bool {
	g := c.lookup(group, false)
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.gone && len(g.members) > 0
}

// Delete deletes consumer groups (DeleteGroups): an error per group,
// NON_EMPTY_GROUP for one with members, nil for one deleted or that is
// not a consumer group here (the classic coordinator deletes its offsets).
func (c *Coordinator) Delete(groups []string) []*kerr.Error {
	out := make([]*kerr.Error, len(groups))
	for i, id := range groups {
		g := c.lookup(id, false)
		if g == nil {
			continue
		}
		g.mu.Lock()
		if !g.gone {
			if len(g.members) > 0 {
				out[i] = kerr.NonEmptyGroup
			} else {
				c.storeGoneLocked(g)
				c.dropLocked(g)
			}
		}
		g.mu.Unlock()
	}
	return out
}

// Unload forgets the groups for which belongs is true (those of an
// offsets partition this broker no longer leads), cancelling their
// members' timers; nothing is stored: the partition's new leader loads
// them (Load). Their members' heartbeats here are then NOT_COORDINATOR
// (the broker routes them by partition), and the clients find the new
// coordinator. It returns how many it forgot.
func (c *Coordinator) Unload(belongs func(group string) bool) int {
	c.mu.Lock()
	var gs []*group
	for id, g := range c.groups {
		if belongs(id) {
			gs = append(gs, g)
		}
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		if !g.gone {
			c.dropLocked(g)
		}
		g.mu.Unlock()
	}
	return len(gs)
}
