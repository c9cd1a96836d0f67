package group

import (
	"cmp"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// MemberDescription is a member as DescribeGroups shows it.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte // for the group's protocol; Stable groups only
	Assignment []byte // Stable groups only
}

// Description is a group as DescribeGroups shows it (Kafka's
// GroupSummary).
type Description struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string // Stable groups only
	Members      []MemberDescription
}

// DescribeGroup describes group; found is false (and the state Dead) if it
// does not exist. Members are in join order.
//
// Errors: COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) DescribeGroup(group string) (d Description, found bool, err *kerr.Error) {
	d = Description{Group: group, State: Dead}
	var a after
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		return d, false, err
	}
	defer g.unlock()
	d.State, d.ProtocolType = g.st, g.ptype
	stable := g.st == Stable
	if stable {
		d.Protocol = g.proto
	}
	for _, m := range g.sortedMembersLocked() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadata(g.proto), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, true, nil
}

// Listing is a group as ListGroups shows it.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
}

// ListGroups lists the groups, by id.
//
// Errors: COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) ListGroups() ([]Listing, *kerr.Error) {
	if c.closed.Load() {
		return nil, errNotAvailable
	}
	c.mu.Lock()
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	out := make([]Listing, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.st != Dead {
			out = append(out, Listing{Group: g.id, ProtocolType: g.ptype, State: g.st})
		}
		g.unlock()
	}
	slices.SortFunc(out, func(x, y Listing) int { return cmp.Compare(x.Group, y.Group) })
	return out, nil
}

// DeleteGroups deletes groups with their offsets (Kafka's
// handleDeleteGroups) and returns one error per group, in order. Only
// Empty groups can be deleted; whatever still waits on one (a pending
// member's session, the offset expiration) completes. Offsets pending in
// open transactions go with the group, as Kafka deletes them: their
// markers find nothing.
//
// Errors: COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
// NOT_COORDINATOR when the OffsetStore refuses the deletion (the group
// stays).
func (c *Coordinator) DeleteGroups(groups []string) []*kerr.Error {
	errs := make([]*kerr.Error, len(groups))
	for i, id := range groups {
		var a after
		g, err := c.lockGroup(id, false, &a)
		switch {
		case err != nil:
			errs[i] = err
		case g == nil:
			errs[i] = kerr.GroupIDNotFound
		case g.st != Empty:
			errs[i] = kerr.NonEmptyGroup
		case g.storeGoneLocked() != nil:
			errs[i] = errStore
		default:
			c.killLocked(g, &a)
			c.log.Info("deleted group", zap.String("group", id))
		}
		if g != nil {
			g.unlock()
		}
		a.run()
	}
	return errs
}
