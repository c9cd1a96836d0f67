package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
)

// SyncRequest is a SyncGroup, whatever its version.
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   string // v3+
	Generation   int32
	ProtocolType string // v5+; "" when not given
	Protocol     string // v5+; "" when not given
	// Assignments is the leader's: each member's assignment. Members it
	// leaves out get an empty one.
	Assignments []Assignment
}

// Assignment is the leader's assignment for one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          *kerr.Error // nil: NONE
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// SyncGroup handles a SyncGroup (Kafka's handleSyncGroup) and answers it
// through respond, exactly once. During CompletingRebalance every member's
// SyncGroup waits, its callback parked on the member (no goroutine waits,
// as in Kafka), until the leader's brings the assignment; a new rebalance,
// the member's removal or fencing, or Close answer it otherwise.
//
// Errors: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL,
// REBALANCE_IN_PROGRESS; NOT_COORDINATOR for a waiting one at Close.
func (c *Coordinator) SyncGroup(req SyncRequest, respond func(SyncResult)) {
	if req.Group == "" {
		respond(SyncResult{Err: errInvalidGroup})
		return
	}
	var a after
	g, err := c.lockGroup(req.Group, false, &a)
	if g == nil {
		if err == nil {
			err = errUnknownMember
		}
		respond(SyncResult{Err: err})
		return
	}
	res, parked := c.syncLocked(g, &req, respond, &a)
	g.unlock()
	a.run()
	if !parked {
		respond(res)
	}
}

// syncLocked is the body of SyncGroup (Kafka's doSyncGroup). It returns
// the answer, or parked when respond was parked on the member.
//
// REQUIRES: g.mu held.
func (c *Coordinator) syncLocked(g *group, req *SyncRequest, respond func(SyncResult), a *after) (SyncResult, bool) {
	m := g.members[req.MemberID]
	switch {
	case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
		return SyncResult{Err: errFenced}, false
	case m == nil:
		return SyncResult{Err: errUnknownMember}, false
	case req.Generation != g.gen:
		return SyncResult{Err: errGeneration}, false
	case req.ProtocolType != "" && req.ProtocolType != g.ptype,
		req.Protocol != "" && req.Protocol != g.proto:
		return SyncResult{Err: errInconsistent}, false
	}
	switch g.st {
	case CompletingRebalance:
		// A SyncGroup it already waits in is answered: Kafka forgets it.
		g.answerSyncLocked(m, SyncResult{Err: errRebalance}, a)
		m.sync = respond
		g.removePendingSyncLocked(m.id, a)
		if m.id == g.leader {
			c.log.Info("assignment received from the leader", zap.String("group", g.id),
				zap.Int32("generation", g.gen), zap.Int("members", len(g.members)))
			byID := make(map[string][]byte, len(req.Assignments))
			for _, as := range req.Assignments {
				byID[as.MemberID] = as.Assignment
			}
			// The group with its assignments is stored first, and the
			// members answered once it is durable (Kafka's doSyncGroup):
			// a coordinator that takes the group over then knows the
			// generation its members go on in.
			switch p, err := g.storeGroupLocked(byID); {
			case err != nil, p == nil:
				c.assignLocked(g, g.gen, byID, err, a)
			default:
				gen := g.gen
				a.do(func() { p(func(err error) { c.groupStored(g, gen, byID, err) }) })
			}
		}
		return SyncResult{}, true
	case Stable:
		g.removePendingSyncLocked(m.id, a)
		c.scheduleSessionLocked(g, m, m.session, a)
		return SyncResult{ProtocolType: g.ptype, Protocol: g.proto, Assignment: m.assignment}, false
	case PreparingRebalance:
		return SyncResult{Err: errRebalance}, false
	default: // Empty holds no member, Dead was excluded by lockGroup
		return SyncResult{Err: errUnknownMember}, false
	}
}

// groupStored ends the wait for the group's metadata stored by the
// leader's SyncGroup of generation gen (see assignLocked). It is the
// store's done: no lock held.
func (c *Coordinator) groupStored(g *group, gen int32, byID map[string][]byte, err error) {
	var a after
	g.mu.Lock()
	c.assignLocked(g, gen, byID, err, &a)
	g.unlock()
	a.run()
}

// assignLocked ends generation gen's CompletingRebalance once the leader's
// assignment is stored (err nil): every member is given its assignment,
// byID's, and every waiting SyncGroup answered, and the group is Stable
// (Kafka's setAndPropagateAssignment). If it could not be stored, every
// waiting SyncGroup is answered the store's error, as Kafka maps it, and
// the group rebalances (resetAndPropagateAssignmentError): the clients
// retry and rejoin. If the generation ended meanwhile (a rebalance, the
// group unloaded, Close), nothing happens: whatever ended it answered.
//
// REQUIRES: g.mu held.
func (c *Coordinator) assignLocked(g *group, gen int32, byID map[string][]byte, err error, a *after) {
	if g.st != CompletingRebalance || g.gen != gen || c.closed.Load() {
		return
	}
	if err != nil {
		code := syncStoreCode(err)
		c.log.Warn("the group's assignment could not be stored; rebalancing", zap.String("group", g.id),
			zap.Int32("generation", gen), zap.Error(err))
		for _, x := range g.members {
			x.assignment = nil
			if g.answerSyncLocked(x, SyncResult{Err: code}, a) {
				c.scheduleSessionLocked(g, x, x.session, a)
			}
		}
		c.maybePrepareRebalanceLocked(g, "the group's assignment could not be stored", a)
		return
	}
	// Kafka's setAndPropagateAssignment.
	for _, x := range g.members {
		x.assignment = byID[x.id]
		if g.answerSyncLocked(x, SyncResult{ProtocolType: g.ptype, Protocol: g.proto, Assignment: x.assignment}, a) {
			// A wait kept its session satisfied: it starts again.
			c.scheduleSessionLocked(g, x, x.session, a)
		}
	}
	g.transitionLocked(Stable, a)
}

// answerSyncLocked answers m's waiting SyncGroup, if any, with res, and
// reports whether there was one.
//
// REQUIRES: g.mu held.
func (g *group) answerSyncLocked(m *member, res SyncResult, a *after) bool {
	f := m.sync
	if f == nil {
		return false
	}
	m.sync = nil
	a.do(func() { f(res) })
	return true
}

// removePendingSyncLocked records member id's SyncGroup; the delayed sync
// completes once none is owed.
//
// REQUIRES: g.mu held.
func (g *group) removePendingSyncLocked(id string, a *after) {
	if _, ok := g.pendingSync[id]; !ok {
		return
	}
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		a.checkSync(g)
	}
}

// delayedSync is Kafka's DelayedSync: after a rebalance every member owes a
// SyncGroup within the rebalance timeout; at its deadline those that did
// not send one are removed and the group rebalances. Its lock is the
// group's mutex.
type delayedSync struct {
	operation.State
	g   *group // immutable
	gen int32  // immutable: the generation it waits in
}

// TryComplete reports whether the wait is over: every member synced, or
// the generation it waits in has ended. REQUIRES: s.g.mu held.
func (s *delayedSync) TryComplete() bool {
	g := s.g
	if g.syncOp != s || g.gen != s.gen {
		return true
	}
	switch g.st {
	case CompletingRebalance, Stable:
		return len(g.pendingSync) == 0
	}
	return true
}

// OnComplete does nothing: the work is OnExpiration's.
func (s *delayedSync) OnComplete() {}

// OnExpiration removes the members that owe a SyncGroup and rebalances
// (Kafka's onExpirePendingSync).
func (s *delayedSync) OnExpiration() {
	g, c := s.g, s.g.c
	var a after
	g.mu.Lock()
	if g.syncOp == s && g.gen == s.gen && (g.st == CompletingRebalance || g.st == Stable) &&
		len(g.pendingSync) > 0 && !c.closed.Load() {
		g.syncOp = nil
		late := make([]string, 0, len(g.pendingSync))
		for id := range g.pendingSync {
			late = append(late, id)
			g.removeLocked(id, &a)
		}
		c.log.Info("removing members that did not send SyncGroup in time", zap.String("group", g.id), zap.Strings("members", late))
		c.prepareRebalanceLocked(g, "members did not send SyncGroup in time", &a)
	}
	g.unlock()
	a.run()
}
