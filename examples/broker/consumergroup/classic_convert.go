package consumergroup

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// ClassicGroupMember is a member of a classic group that becomes a
// consumer group (FromClassic): what the classic coordinator knows of
// it.
type ClassicGroupMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
	SessionTimeout, RebalanceTimeout           time.Duration
	Protocols                                  []ClassicProtocol
	// Assignment is its ConsumerProtocol assignment of the group's
	// last generation (empty if it has none yet).
	Assignment []byte
}

// FromClassic makes group, a classic group with members of the
// ConsumerProtocol at generation, a consumer group with those members as
// its classic members (Kafka's ConsumerGroup.fromClassicGroup, when the
// first consumer-protocol member joins, KIP-848's online upgrade): the
// group and target epochs are the generation, and each member is Stable
// at it with its last classic assignment as both its partitions and its
// target, so that nothing moves until the joining member bumps the
// epoch; the members' next heartbeats then tell them to join again. The
// subscription is that of protocol, the group's selected protocol. An
// Empty consumer group of that id is replaced; one with members is
// INCONSISTENT_GROUP_PROTOCOL; a member without protocols, or whose
// subscription is not the ConsumerProtocol's, GROUP_ID_NOT_FOUND, as
// Kafka refuses to convert a group whose embedded protocol is malformed;
// neither changes anything. The change is appended to the store with
// nobody waiting: the joining member's heartbeat that follows is
// answered once it, and what came before it, is durable. O(members and
// partitions).
func (c *Coordinator) FromClassic(group string, generation int32, protocol string, members []ClassicGroupMember) *kerr.Error {
	if c.closed.Load() {
		return kerr.CoordinatorNotAvailable
	}
	ts := c.cfg.topics()
	subs := make([]subscription, len(members))
	for i, cm := range members {
		ps := selected(cm.Protocols, protocol)
		if len(ps) == 0 {
			return kerr.GroupIDNotFound
		}
		var err error
		if subs[i], err = decodeSubscription(ps, ts); err != nil {
			// Kafka: "the embedded consumer protocol is malformed".
			return kerr.GroupIDNotFound
		}
	}
	c.mu.Lock()
	old := c.groups[group]
	c.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		busy := !old.gone && len(old.members) > 0
		if !busy {
			c.dropLocked(old)
		}
		old.mu.Unlock()
		if busy {
			return kerr.InconsistentGroupProtocol
		}
	}
	g := newGroup(group)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch, g.targetEpoch = generation, generation
	for i, cm := range members {
		m := &member{id: cm.MemberID, instanceID: cm.InstanceID, clientID: cm.ClientID, clientHost: cm.ClientHost,
			rebalanceTimeout: cm.RebalanceTimeout, prevEpoch: generation, g: g, names: sortedUnique(subs[i].topics),
			classic: &ClassicMember{SessionTimeout: cm.SessionTimeout, Protocols: selected(cm.Protocols, protocol)}}
		if subs[i].rack != nil {
			m.rackID = *subs[i].rack
		}
		m.initTimers(c)
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
		// A partition two members' assignments name (there is none in
		// one generation's assignment) would stay the first's.
		held := Assignment{}
		for id, ps := range decodeClassicAssignment(cm.Assignment, ts) {
			for _, p := range ps {
				if g.freeLocked(m.id)(id, p) {
					held.add(id, p)
				}
			}
		}
		g.target[m.id] = held.clone()
		g.setCurrentLocked(m, current{state: stable, epoch: generation, assigned: held})
		if err := c.restartClassicSessionLocked(m); err != nil {
			return err
		}
	}
	g.refreshTopicsLocked(ts, true)
	if _, err := c.storeLocked(g, true); err != nil {
		c.log.Warn("consumer group store refused a conversion from classic", zap.String("group", group), zap.Error(err))
	}
	c.mu.Lock()
	c.groups[group] = g
	c.mu.Unlock()
	c.log.Info("classic group converted to a consumer group", zap.String("group", group), zap.Int32("epoch", generation),
		zap.Int("members", len(g.members)))
	return nil
}

// ClassicGroup is a consumer group left with classic members alone,
// handed back to the classic coordinator by ToClassic: its generation
// and its members, each with its current assignment in the
// ConsumerProtocol.
type ClassicGroup struct {
	Group      string
	Generation int32
	Members    []ClassicGroupMember // by member id
}

// ToClassic takes group out of this coordinator if its members are all
// classic ones (its last consumer-protocol member left, or was fenced)
// and hands them back (Kafka's convertToClassicGroup, KIP-848's online
// downgrade), as they are: each with its assigned partitions encoded in
// the ConsumerProtocol at its subscription's version, the generation
// the highest member epoch, which members at it heartbeat on until the
// classic group's rebalance tells them to join again. The group's
// records are tombstoned in the store; WithOnEmpty's hook is not called:
// the group lives on, classic. It reports false, and changes nothing,
// if the group does not exist, has no members, has a member of the
// consumer protocol or a static member that left for now, or has more
// members than maxSize, the classic group.max.size (Kafka's
// validateOnlineDowngrade...). O(members and partitions).
func (c *Coordinator) ToClassic(group string, maxSize int) (ClassicGroup, bool) {
	g := c.lookup(group, false)
	if g == nil {
		return ClassicGroup{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone || len(g.members) == 0 {
		return ClassicGroup{}, false
	}
	for _, m := range g.members {
		if m.classic == nil || m.left {
			return ClassicGroup{}, false
		}
	}
	if len(g.members) > maxSize {
		c.log.Info("consumer group not converted back to a classic group: its size is over group.max.size",
			zap.String("group", g.id), zap.Int("members", len(g.members)), zap.Int("max", maxSize))
		return ClassicGroup{}, false
	}
	ts := c.cfg.topics()
	out := ClassicGroup{Group: g.id}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		out.Generation = max(out.Generation, m.epoch)
		out.Members = append(out.Members, ClassicGroupMember{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, SessionTimeout: m.classic.SessionTimeout, RebalanceTimeout: m.rebalanceTimeout,
			Protocols: m.classic.clone().Protocols, Assignment: encodeClassicAssignment(m.assigned, m.classic, ts)})
	}
	c.storeGoneLocked(g)
	c.dropLocked(g)
	c.log.Info("consumer group converted back to a classic group", zap.String("group", g.id),
		zap.Int32("generation", out.Generation), zap.Int("members", len(out.Members)))
	return out, true
}

// onlyClassicLocked reports whether g's members, one or more, are all
// classic ones: it may go back to being a classic group.
//
// REQUIRES: g.mu held.
func (g *group) onlyClassicLocked() bool {
	for _, m := range g.members {
		if m.classic == nil {
			return false
		}
	}
	return len(g.members) > 0
}

// selected returns protocols with protocol, the group's selected one,
// first ("" or absent: as they are), cloned.
func selected(protocols []ClassicProtocol, protocol string) []ClassicProtocol {
	out := make([]ClassicProtocol, 0, len(protocols))
	for _, p := range protocols {
		p.Metadata = slices.Clone(p.Metadata)
		if p.Name == protocol {
			out = append([]ClassicProtocol{p}, out...)
		} else {
			out = append(out, p)
		}
	}
	return out
}
