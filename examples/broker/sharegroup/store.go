package sharegroup

import (
	"maps"
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// Store keeps what a Coordinator must find again when it moves or
// restarts (Kafka's share group records in __consumer_offsets), as
// groupstore.Store says, called with Coordinator.mu held: each group's
// epoch, target epoch and subscribed topics' hash, and each member with
// its subscription, epoch, assignment and target. Config.Store sets one;
// a new coordinator replays the partition and hands its share groups to
// Load.
type Store = groupstore.Store[StoredGroup, StoredMember]

// Change is what one step of a share group changed, appended as one batch
// (groupstore's).
type Change = groupstore.Change[StoredGroup, StoredMember]

// StoredGroup is a share group as a Store keeps it (Kafka's
// ShareGroupMetadataValue, ShareGroupTargetAssignmentMetadataValue and its
// members' records).
type StoredGroup struct {
	Group       string
	Epoch       int32 // the group epoch
	TargetEpoch int32 // the target assignment's epoch
	// TopicsHash is the hash of the subscribed topics (names, ids and
	// partition counts) the group was last assigned with: a load
	// compares it with the topics then, and bumps the epoch only if they
	// changed meanwhile (Kafka's MetadataHash).
	TopicsHash uint64
	Members    []StoredMember // by member id
}

// StoredMember is a member as a Store keeps it (Kafka's
// ShareGroupMemberMetadataValue, ShareGroupCurrentMemberAssignmentValue
// and ShareGroupTargetAssignmentMemberValue in one).
type StoredMember struct {
	MemberID, RackID, ClientID, ClientHost string
	Topics                                 []string // subscribed, sorted
	Epoch                                  int32
	// Assigned is what it was last given, Target its target assignment.
	// Never nil.
	Assigned, Target Assignment
}

// Equal reports whether s and o are the same member, field by field (nil
// and empty alike). O(partitions).
func (s *StoredMember) Equal(o *StoredMember) bool {
	return s.MemberID == o.MemberID && s.RackID == o.RackID && s.ClientID == o.ClientID &&
		s.ClientHost == o.ClientHost && slices.Equal(s.Topics, o.Topics) && s.Epoch == o.Epoch &&
		s.Assigned.Equal(o.Assigned) && s.Target.Equal(o.Target)
}

// Equal reports whether a and o hold the same partitions (nil and empty
// alike). O(partitions).
func (a Assignment) Equal(o Assignment) bool {
	return maps.EqualFunc(a, o, slices.Equal)
}

// clone returns a deep copy of a, never nil.
func (a Assignment) clone() Assignment {
	out := make(Assignment, len(a))
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

// sameMeta reports whether s and o have the same metadata, their members
// aside.
func (s *StoredGroup) sameMeta(o *StoredGroup) bool {
	return s.Group == o.Group && s.Epoch == o.Epoch && s.TargetEpoch == o.TargetEpoch && s.TopicsHash == o.TopicsHash
}

func (g *group) storedMetaLocked() StoredGroup {
	return StoredGroup{Group: g.id, Epoch: g.epoch, TargetEpoch: g.targetEpoch, TopicsHash: g.topicsHash}
}

func (g *group) storedLocked(m *member) StoredMember {
	return StoredMember{MemberID: m.id, RackID: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
		Topics: slices.Clone(m.topics), Epoch: m.epoch, Assigned: m.assigned.clone(), Target: g.target[m.id].clone()}
}

// storeLocked appends what changed in g since it was last stored: its
// metadata, the members whose record changed (each is compared with what
// was last stored: a new target changes many), and the members removed
// meanwhile. It returns the wait for the change to be durable: nil when
// there is no store or nothing changed. What a refused append left
// unstored is tried again with the group's next change.
// O(members × partitions).
//
// REQUIRES: c.mu held.
func (c *Coordinator) storeLocked(g *group) (groupstore.Pending, error) {
	if c.cfg.Store == nil {
		return nil, nil
	}
	ch := Change{Group: g.id, Removed: slices.Sorted(slices.Values(g.removed))}
	ch.Removed = slices.Compact(ch.Removed)
	if meta := g.storedMetaLocked(); g.stored == nil || !g.stored.sameMeta(&meta) {
		ch.Meta = &meta
	}
	var changed []*member
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if sm := g.storedLocked(m); m.stored == nil || !m.stored.Equal(&sm) {
			ch.Members = append(ch.Members, sm)
			changed = append(changed, m)
		}
	}
	p, err := groupstore.AppendChanged(c.cfg.Store, ch, func(meta *StoredGroup) { g.stored = meta },
		func(i int, sm *StoredMember) { changed[i].stored = sm })
	if err != nil || p == nil {
		return nil, err
	}
	g.removed = g.removed[:0]
	return p, nil
}

// storeQuietlyLocked appends g's change when nobody waits for it (a
// member's session expired, an empty group made): a refusal is dropped,
// and the group's next change carries it again.
//
// REQUIRES: c.mu held.
func (c *Coordinator) storeQuietlyLocked(g *group) {
	_, _ = c.storeLocked(g)
}

// storeGoneLocked appends that g is gone: a tombstone of each member it
// had stored, then of the group. Nobody waits for it.
//
// REQUIRES: c.mu held.
func (c *Coordinator) storeGoneLocked(g *group) {
	if c.cfg.Store == nil || g.stored == nil && len(g.removed) == 0 {
		return // nothing of it was stored
	}
	removed := slices.Sorted(slices.Values(g.removed))
	_, _ = c.cfg.Store.Append(Change{Group: g.id, Removed: slices.Compact(removed), Deleted: true})
}

// Load brings back share groups a Store kept, as Kafka's coordinator
// replays its share group records when it comes to lead an offsets
// partition: each at its epoch and target epoch, each member with its id,
// epoch, subscription, assignment and target. Each member's session
// starts afresh (group.share.session.timeout.ms, as Kafka schedules a
// loaded member's session timeout), so that a member that never comes
// back is removed; members that go on heartbeating go on at their epochs.
// The subscribed topics are looked at again at the group's next
// heartbeat, and the epoch bumped only if they changed meanwhile
// (TopicsHash). A group already here is replaced. O(members and
// partitions).
func (c *Coordinator) Load(groups []StoredGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sg := range groups {
		if old := c.groups[sg.Group]; old != nil {
			c.dropLocked(old)
		}
		g := newGroup(sg.Group)
		session, _ := c.timeouts(g.id)
		g.epoch, g.targetEpoch, g.topicsHash = sg.Epoch, sg.TargetEpoch, sg.TopicsHash
		meta := g.storedMetaLocked()
		g.stored = &meta
		for _, sm := range sg.Members {
			m := &member{c: c, group: g.id, id: sm.MemberID, epoch: sm.Epoch, rack: sm.RackID, clientID: sm.ClientID,
				clientHost: sm.ClientHost, topics: slices.Clone(sm.Topics), assigned: sm.Assigned.clone()}
			m.task.Init(m)
			g.members[m.id] = m
			g.target[m.id] = sm.Target.clone()
			stored := g.storedLocked(m)
			m.stored = &stored
			_, _ = c.cfg.Timer.Reschedule(&m.task, session) // fails only once closed
		}
		c.putLocked(g)
	}
}

// Unload forgets the share groups for which belongs is true (those of an
// offsets partition this broker no longer leads), cancelling their
// members' sessions; nothing is stored and nobody is told they left: the
// partition's new leader loads them (Load), and their members'
// heartbeats here are NOT_COORDINATOR. It returns how many it forgot.
func (c *Coordinator) Unload(belongs func(group string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id, g := range c.groups {
		if belongs(id) {
			c.dropLocked(g)
			n++
		}
	}
	return n
}

// dropLocked forgets g and cancels its members' sessions.
//
// REQUIRES: c.mu held.
func (c *Coordinator) dropLocked(g *group) {
	for _, m := range g.members {
		c.cfg.Timer.Cancel(&m.task)
	}
	c.deleteLocked(g.id)
}
