package consumergroup

import (
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
// INCONSISTENT_GROUP_PROTOCOL. The change is appended to the store with
// nobody waiting: the joining member's heartbeat that follows is
// answered once it, and what came before it, is durable. O(members and
// partitions).
func (c *Coordinator) FromClassic(group string, generation int32, protocol string, members []ClassicGroupMember) *kerr.Error {
	if c.closed.Load() {
		return kerr.CoordinatorNotAvailable
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
	ts := c.cfg.topics()
	for _, cm := range members {
		protos := make([]ClassicProtocol, 0, len(cm.Protocols))
		for _, p := range cm.Protocols {
			if p.Name == protocol {
				protos = append([]ClassicProtocol{p}, protos...)
			} else {
				protos = append(protos, p)
			}
		}
		if len(protos) == 0 {
			continue
		}
		m := &member{id: cm.MemberID, instanceID: cm.InstanceID, clientID: cm.ClientID, clientHost: cm.ClientHost,
			rebalanceTimeout: cm.RebalanceTimeout, prevEpoch: generation, g: g,
			classic: &ClassicMember{SessionTimeout: cm.SessionTimeout, Protocols: protos}}
		if sub, err := decodeSubscription(protos[:1], ts); err == nil {
			m.names = sortedUnique(sub.topics)
			if sub.rack != nil {
				m.rackID = *sub.rack
			}
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
