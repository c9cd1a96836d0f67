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

// ValidateCommit checks an offset commit to group by memberID at
// memberEpoch (Kafka's ConsumerGroup.validateOffsetCommit): a commit with
// a negative epoch is a simple consumer's or the admin's, taken while the
// group has no member; else the member must exist and be at its epoch
// (STALE_MEMBER_EPOCH: it must first learn its new epoch from a
// heartbeat). ok is false if group is not a consumer group here: the
// classic coordinator checks it.
func (c *Coordinator) ValidateCommit(group, memberID string, memberEpoch int32) (ok bool, err *kerr.Error) {
	return c.validateOffsets(group, memberID, memberEpoch, func(members int) bool { return memberEpoch < 0 && members == 0 })
}

// ValidateTxnCommit checks a transactional offset commit (TxnOffsetCommit)
// as ValidateCommit does, but one that names no member, no instance and
// no epoch is taken whatever the members: before v3 it cannot name them.
func (c *Coordinator) ValidateTxnCommit(group, memberID, instanceID string, memberEpoch int32) (ok bool, err *kerr.Error) {
	return c.validateOffsets(group, memberID, memberEpoch, func(members int) bool {
		return memberEpoch < 0 && members == 0 || memberEpoch == -1 && memberID == "" && instanceID == ""
	})
}

// ValidateFetch checks an offset fetch that names a member (OffsetFetch
// v9+, Kafka's validateOffsetFetch): without a member id and with a
// negative epoch it is the admin's, always taken.
func (c *Coordinator) ValidateFetch(group, memberID string, memberEpoch int32) (ok bool, err *kerr.Error) {
	return c.validateOffsets(group, memberID, memberEpoch, func(int) bool { return memberID == "" && memberEpoch < 0 })
}

// validateOffsets checks memberID at memberEpoch in group, unless
// anonymous (given the group's member count) says the request needs no
// member.
func (c *Coordinator) validateOffsets(group, memberID string, memberEpoch int32, anonymous func(members int) bool) (bool, *kerr.Error) {
	g := c.lookup(group, false)
	if g == nil {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return false, nil
	}
	if anonymous(len(g.members)) {
		return true, nil
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return true, kerr.UnknownMemberID
	case m.epoch != memberEpoch:
		return true, kerr.StaleMemberEpoch
	}
	return true, nil
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
				c.dropLocked(g)
			}
		}
		g.mu.Unlock()
	}
	return out
}

// Unload forgets the groups for which belongs is true (those of an
// offsets partition this broker no longer leads), cancelling their
// members' timers. It returns how many it forgot.
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
