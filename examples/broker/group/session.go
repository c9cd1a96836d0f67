package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
)

// HeartbeatRequest is a Heartbeat, whatever its version.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID string // v3+
	Generation int32
}

// Heartbeat keeps a member's session alive (Kafka's handleHeartbeat): the
// member's pending session operation completes and the next one is
// submitted. During a rebalance the answer is REBALANCE_IN_PROGRESS, which
// tells the member to rejoin.
//
// Errors: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) *kerr.Error {
	if req.Group == "" {
		return errInvalidGroup
	}
	var a after
	g, err := c.lockGroup(req.Group, false, &a)
	if g == nil {
		if err == nil {
			err = errUnknownMember
		}
		return err
	}
	m := g.members[req.MemberID]
	switch {
	case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
		err = errFenced
	case m == nil:
		err = errUnknownMember
	case req.Generation != g.gen:
		err = errGeneration
	case g.st == Empty: // holds no member: for safety
		err = errUnknownMember
	default:
		c.scheduleSessionLocked(g, m, m.session, &a)
		if g.st == PreparingRebalance {
			err = errRebalance
		}
	}
	g.unlock()
	a.run()
	return err
}

// MemberIdentity names a member leaving: by member id, or, from
// LeaveGroup v3, by instance id alone (an administrator removing a static
// member).
type MemberIdentity struct {
	MemberID   string
	InstanceID string
	Reason     string // v5+; logged
}

// LeaveGroup removes members (Kafka's handleLeaveGroup); the group
// rebalances. It returns the group's error, or each member's.
//
// Errors: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE; per member
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID.
func (c *Coordinator) LeaveGroup(group string, members []MemberIdentity) (*kerr.Error, []*kerr.Error) {
	if group == "" {
		return errInvalidGroup, nil
	}
	errs := make([]*kerr.Error, len(members))
	var a after
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		if err != nil {
			return err, nil
		}
		for i := range errs {
			errs[i] = errUnknownMember
		}
		return nil, errs
	}
	for i, l := range members {
		reason := "member left; client reason: " + l.Reason
		_, pending := g.pending[l.MemberID]
		switch {
		case l.MemberID == "":
			// An administrator removing a static member by instance id.
			id, ok := g.static[l.InstanceID]
			if l.InstanceID == "" || !ok {
				errs[i] = errUnknownMember
				continue
			}
			c.removeMemberAndUpdateLocked(g, g.members[id], reason, &a)
		case pending:
			delete(g.pending, l.MemberID)
			a.checkSession(g, l.MemberID)
			if g.st == PreparingRebalance {
				a.checkJoin(g)
			}
		default:
			if errs[i] = g.validateMemberLocked(l.MemberID, l.InstanceID); errs[i] == nil {
				c.removeMemberAndUpdateLocked(g, g.members[l.MemberID], reason, &a)
			}
		}
		if errs[i] == nil {
			c.log.Info("member left the group", zap.String("group", g.id), zap.String("member", l.MemberID),
				zap.String("instance", l.InstanceID), zap.String("reason", l.Reason))
		}
	}
	g.unlock()
	a.run()
	return nil, errs
}

// removeMemberAndUpdateLocked removes m and moves the group on: a Stable
// or CompletingRebalance group rebalances, a rebalance under way may now
// have everyone it waits for (Kafka's removeMemberAndUpdateGroup).
//
// REQUIRES: g.mu held.
func (c *Coordinator) removeMemberAndUpdateLocked(g *group, m *member, reason string, a *after) {
	g.removeLocked(m.id, a)
	switch g.st {
	case Stable, CompletingRebalance:
		c.maybePrepareRebalanceLocked(g, reason, a)
	case PreparingRebalance:
		a.checkJoin(g)
	}
}

// scheduleSessionLocked completes m's pending session operation and starts
// the next, due in timeout (Kafka's completeAndScheduleNextExpiration):
// bumping the epoch satisfies the old one, which the check completes once
// the mutex is released, and the new one carries the new epoch.
//
// REQUIRES: g.mu held.
func (c *Coordinator) scheduleSessionLocked(g *group, m *member, timeout time.Duration, a *after) {
	m.epoch++
	s := &session{g: g, id: m.id, epoch: m.epoch}
	s.ShareLock(&g.mu)
	a.checkSession(g, m.id)
	submit(a, c.sessions, s, timeout, memberKey{g.id, m.id})
}

// schedulePendingLocked starts the session of a pending member (one that
// was handed its id with MEMBER_ID_REQUIRED): if it does not join within
// timeout, its id is forgotten (Kafka's addPendingMemberExpiration).
//
// REQUIRES: g.mu held.
func (c *Coordinator) schedulePendingLocked(g *group, id string, timeout time.Duration, a *after) {
	s := &session{g: g, id: id, pending: true}
	s.ShareLock(&g.mu)
	submit(a, c.sessions, s, timeout, memberKey{g.id, id})
}

// session is a member's session (Kafka's DelayedHeartbeat): it completes
// when the member heartbeats (or joins, syncs, commits), leaves, or waits
// in a JoinGroup or SyncGroup; at its deadline the member is removed. Its
// lock is the group's mutex.
type session struct {
	operation.State
	g       *group // immutable, as everything after it
	id      string
	epoch   uint64
	pending bool // a pending member's: it ends when the member joins
}

// TryComplete reports whether the session no longer needs a heartbeat
// (Kafka's tryCompleteHeartbeat). REQUIRES: s.g.mu held.
func (s *session) TryComplete() bool {
	g := s.g
	if g.st == Dead {
		return true
	}
	if s.pending {
		_, still := g.pending[s.id]
		return !still
	}
	m := g.members[s.id]
	return m == nil || m.satisfied(s.epoch)
}

// OnComplete does nothing: a satisfied session needs no answer.
func (s *session) OnComplete() {}

// OnExpiration removes the member if its session is still unsatisfied,
// and the group rebalances (Kafka's onExpireHeartbeat).
func (s *session) OnExpiration() {
	g, c := s.g, s.g.c
	var a after
	g.mu.Lock()
	switch m := g.members[s.id]; {
	case g.st == Dead || c.closed.Load():
	case s.pending:
		if _, ok := g.pending[s.id]; ok {
			c.log.Info("pending member did not join within its session timeout", zap.String("group", g.id), zap.String("member", s.id))
			delete(g.pending, s.id)
			if g.st == PreparingRebalance {
				a.checkJoin(g)
			}
		}
	case m != nil && !m.satisfied(s.epoch):
		c.log.Info("member's session expired; removing it", zap.String("group", g.id), zap.String("member", s.id))
		c.removeMemberAndUpdateLocked(g, m, "session of member "+s.id+" expired", &a)
	}
	g.unlock()
	a.run()
}
