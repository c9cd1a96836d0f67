package consumergroup

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// Store keeps what the coordinator must find again when it moves or
// restarts (Kafka's consumer group records in __consumer_offsets), as
// groupstore.Store says: each group's epoch, target epoch, assignor and
// subscribed topics' hash, and each member with its subscription, epochs,
// reconciliation and target. WithStore sets one; the broker's appends to
// the group's partition of __consumer_offsets, and a new coordinator
// replays the partition and hands its groups to Load.
type Store = groupstore.Store[StoredGroup, StoredMember]

// Pending is a change appended but not yet durable (groupstore's).
type Pending = groupstore.Pending

// Change is what one step of a group changed, appended as one batch
// (groupstore's).
type Change = groupstore.Change[StoredGroup, StoredMember]

// StoredGroup is a consumer group as a Store keeps it (Kafka's
// ConsumerGroupMetadataValue and its members' records).
type StoredGroup struct {
	Group       string
	Epoch       int32  // the group epoch
	TargetEpoch int32  // the target assignment's epoch
	Assignor    string // the assignor the target was computed with; "" before any
	// TopicsHash is the hash of the subscribed topics (names, ids and
	// partition counts) the group last saw: a load compares it with the
	// topics then, and bumps the epoch only if they changed meanwhile
	// (Kafka 4's metadata hash).
	TopicsHash uint64
	Members    []StoredMember // by member id
}

// StoredMember is a member as a Store keeps it (Kafka's
// ConsumerGroupMemberMetadataValue, ConsumerGroupCurrentMemberAssignmentValue
// and ConsumerGroupTargetAssignmentMemberValue in one).
type StoredMember struct {
	MemberID, InstanceID, RackID string
	ClientID, ClientHost         string
	Names                        []string // subscribed topic names, sorted
	Regex                        string   // subscribed regular expression, "" for none
	Assignor                     string   // the server assignor it asks for, "" for none
	RebalanceTimeout             time.Duration
	Epoch, PrevEpoch             int32
	// Left is a static member that left for now (epoch -2), keeping its
	// partitions until its session expires or its instance joins again.
	Left bool
	// Assigned and Revoking are what it holds, Revoking what it must
	// give up first (its state follows from them: reconcile.go); Target
	// is its target assignment. Never nil.
	Assigned, Revoking, Target Assignment
	// Since is the epoch each partition it holds was given to it at
	// (KIP-1251's assignment epochs).
	Since map[TopicID]map[int32]int32
	// Classic is a classic member's session timeout and protocols
	// (Kafka's classic_member_metadata); nil for a consumer-protocol
	// member.
	Classic *ClassicMember
}

// storedMetaLocked returns g's metadata as a store keeps it.
//
// REQUIRES: g.mu held.
func (g *group) storedMetaLocked() StoredGroup {
	return StoredGroup{Group: g.id, Epoch: g.epoch, TargetEpoch: g.targetEpoch, Assignor: g.assignor, TopicsHash: g.topicsHash}
}

// sameMeta reports whether s and o have the same metadata, their members
// aside.
func (s *StoredGroup) sameMeta(o *StoredGroup) bool {
	return s.Group == o.Group && s.Epoch == o.Epoch && s.TargetEpoch == o.TargetEpoch && s.Assignor == o.Assignor &&
		s.TopicsHash == o.TopicsHash
}

// storedLocked returns m as a store keeps it.
//
// REQUIRES: g.mu held.
func (g *group) storedLocked(m *member) StoredMember {
	since := make(map[TopicID]map[int32]int32, len(m.since))
	for id, ps := range m.since {
		since[id] = maps.Clone(ps)
	}
	return StoredMember{
		MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
		Names: slices.Clone(m.names), Regex: m.regex, Assignor: m.assignor, RebalanceTimeout: m.rebalanceTimeout,
		Epoch: m.epoch, PrevEpoch: m.prevEpoch, Left: m.left,
		Assigned: orEmpty(m.assigned.clone()), Revoking: orEmpty(m.revoking.clone()), Target: orEmpty(g.target[m.id].clone()),
		Since: since, Classic: m.classic.clone(),
	}
}

func orEmpty(a Assignment) Assignment {
	if a == nil {
		return Assignment{}
	}
	return a
}

// Equal reports whether s and o are the same member, field by field
// (nil and empty alike). O(partitions).
func (s *StoredMember) Equal(o *StoredMember) bool {
	if s.MemberID != o.MemberID || s.InstanceID != o.InstanceID || s.RackID != o.RackID || s.ClientID != o.ClientID ||
		s.ClientHost != o.ClientHost || !slices.Equal(s.Names, o.Names) || s.Regex != o.Regex || s.Assignor != o.Assignor ||
		s.RebalanceTimeout != o.RebalanceTimeout || s.Epoch != o.Epoch || s.PrevEpoch != o.PrevEpoch || s.Left != o.Left ||
		!s.Assigned.equal(o.Assigned) || !s.Revoking.equal(o.Revoking) || !s.Target.equal(o.Target) ||
		len(s.Since) != len(o.Since) || !s.Classic.equal(o.Classic) {
		return false
	}
	for id, ps := range s.Since {
		if !maps.Equal(ps, o.Since[id]) {
			return false
		}
	}
	return true
}

// storeLocked appends what changed in g since it was last stored: its
// metadata, the members ms, those whose target a new target assignment
// changed (g.retargeted), or every member when all or after a refused
// append, each only if its record changed, and the members removed
// meanwhile. It returns the wait for the change to be durable: nil when
// there is no store or nothing changed. What a refused append left
// unstored is tried again with the group's next change. O(partitions of
// the members looked at): a member's join looks at it and at the few
// whose target it moved, not at the whole group.
//
// REQUIRES: g.mu held.
func (c *Coordinator) storeLocked(g *group, all bool, ms ...*member) (Pending, error) {
	if c.cfg.store == nil {
		g.retargeted = g.retargeted[:0]
		return nil, nil
	}
	if all || g.unstored {
		ms = slices.Collect(maps.Values(g.members))
	} else {
		ms = slices.Clone(ms)
		for _, id := range g.retargeted {
			if m := g.members[id]; m != nil {
				ms = append(ms, m)
			}
		}
	}
	// By id, each once: the records' order is fixed.
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	ms = slices.Compact(ms)
	ch := Change{Group: g.id, Removed: slices.Clone(g.removed)}
	slices.Sort(ch.Removed)
	ch.Removed = slices.Compact(ch.Removed)
	if meta := g.storedMetaLocked(); g.stored == nil || !g.stored.sameMeta(&meta) {
		ch.Meta = &meta
	}
	var changed []*member
	for _, m := range ms {
		if g.members[m.id] != m {
			continue // removed meanwhile: its tombstone is in Removed
		}
		sm := g.storedLocked(m)
		if m.stored == nil || !m.stored.Equal(&sm) {
			ch.Members = append(ch.Members, sm)
			changed = append(changed, m)
		}
	}
	p, err := groupstore.AppendChanged(c.cfg.store, ch, func(meta *StoredGroup) { g.stored = meta },
		func(i int, sm *StoredMember) { changed[i].stored = sm })
	if err != nil {
		g.unstored = true
		c.log.Warn("consumer group store refused a change", zap.String("group", g.id), zap.Error(err))
		return nil, err
	}
	g.unstored = false
	g.retargeted = g.retargeted[:0]
	if p != nil {
		g.removed = g.removed[:0]
	}
	return p, nil
}

// storeGoneLocked appends that g is gone: a tombstone of each member left
// and of those removed but not yet stored, then of the group. Nobody
// waits for it.
//
// REQUIRES: g.mu held.
func (c *Coordinator) storeGoneLocked(g *group) {
	if c.cfg.store == nil || g.stored == nil && len(g.members) == 0 && len(g.removed) == 0 {
		return // nothing of it was stored: a join that made it failed
	}
	removed := append(slices.Collect(maps.Keys(g.members)), g.removed...)
	slices.Sort(removed)
	if _, err := c.cfg.store.Append(Change{Group: g.id, Removed: slices.Compact(removed), Deleted: true}); err != nil {
		c.log.Warn("consumer group store refused a deletion", zap.String("group", g.id), zap.Error(err))
	}
}

// storeQuietlyLocked appends g's change when nobody waits for it (a
// member's session expired, it was fenced): a refusal is logged, and the
// group's next change carries it again.
//
// REQUIRES: g.mu held.
func (c *Coordinator) storeQuietlyLocked(g *group) {
	_, _ = c.storeLocked(g, false)
}

// Load brings back groups a store kept, as Kafka's coordinator replays
// its consumer group records when it comes to lead an offsets partition:
// each at its epoch, target and assignor, each member at its epochs with
// its subscription, its partitions (assigned and pending revocation), its
// target and its assignment epochs, static members with their instance
// ids. Each member's session starts afresh (Kafka gives loaded members a
// new session timeout), and the rebalance timeout of a member that must
// revoke partitions too: members that go on heartbeating go on at the
// same epochs without a rebalance. The subscribed topics are looked at
// again at the group's next heartbeat, and the epoch bumped only if they
// changed meanwhile (TopicsHash). A group already here is replaced. It
// returns the number of groups loaded, or COORDINATOR_NOT_AVAILABLE once
// closed. O(members and partitions).
func (c *Coordinator) Load(groups []StoredGroup) (int, error) {
	n := 0
	for _, sg := range groups {
		if c.closed.Load() {
			return n, kerr.CoordinatorNotAvailable
		}
		g := newGroup(sg.Group)
		g.mu.Lock()
		g.epoch, g.targetEpoch, g.assignor, g.topicsHash = sg.Epoch, sg.TargetEpoch, sg.Assignor, sg.TopicsHash
		meta := g.storedMetaLocked()
		g.stored = &meta
		for _, sm := range sg.Members {
			c.loadMemberLocked(g, sm)
		}
		c.mu.Lock()
		old := c.groups[g.id]
		c.groups[g.id] = g
		c.mu.Unlock()
		g.mu.Unlock()
		if old != nil {
			c.log.Warn("loaded a consumer group that was here already", zap.String("group", g.id))
		}
		n++
	}
	if n > 0 {
		c.log.Info("loaded consumer groups", zap.Int("groups", n))
	}
	return n, nil
}

// loadMemberLocked adds sm to g, new, and starts its timers.
//
// REQUIRES: g.mu held.
func (c *Coordinator) loadMemberLocked(g *group, sm StoredMember) {
	m := &member{id: sm.MemberID, instanceID: sm.InstanceID, rackID: sm.RackID, clientID: sm.ClientID,
		clientHost: sm.ClientHost, names: slices.Clone(sm.Names), regex: sm.Regex, assignor: sm.Assignor,
		rebalanceTimeout: sm.RebalanceTimeout, prevEpoch: sm.PrevEpoch, left: sm.Left, classic: sm.Classic.clone(), g: g}
	m.initTimers(c)
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	g.target[m.id] = orEmpty(sm.Target.clone())
	m.since = sm.Since
	g.setCurrentLocked(m, current{state: loadedState(sm, g.targetEpoch), epoch: sm.Epoch,
		assigned: orEmpty(sm.Assigned.clone()), revoking: orEmpty(sm.Revoking.clone())})
	stored := g.storedLocked(m)
	m.stored = &stored
	if m.classic != nil {
		_ = c.restartClassicSessionLocked(m) // fails only once closed
	} else {
		m.sessionDue = c.clk.Now() + c.cfg.session
		_, _ = c.tm.Reschedule(&m.session, c.cfg.session) // fails only once closed
	}
	if !m.left {
		c.armRebalanceLocked(m)
	}
}

// loadedState is the reconciliation state of a stored member, which its
// partitions say (reconcile.go): a member with partitions to revoke is
// UnrevokedPartitions (nextStep keeps one only so), one at the target's
// epoch without all of its target UnreleasedPartitions (a Stable member
// at that epoch has it all), any other Stable (at an older epoch the two
// reconcile alike).
func loadedState(sm StoredMember, targetEpoch int32) memberState {
	switch {
	case sm.Revoking.count() > 0:
		return unrevokedPartitions
	case sm.Epoch == targetEpoch && !sm.Assigned.equal(sm.Target):
		return unreleasedPartitions
	}
	return stable
}
