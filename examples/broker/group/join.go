package group

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// JoinRequest is a JoinGroup, whatever its version.
type JoinRequest struct {
	Group        string
	MemberID     string // "" on a first join
	InstanceID   string // group.instance.id (v5+); "" for a dynamic member
	ClientID     string
	ClientHost   string
	ProtocolType string
	Protocols    []Protocol // in the member's order of preference

	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration // v0 has none: the session timeout

	// RequireKnownMemberID (v4+, KIP-394): a dynamic member's first join
	// is answered MEMBER_ID_REQUIRED with its new id, and the member
	// joins with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment (v9+, KIP-814): a static leader rejoining a
	// Stable group is told it leads, with the members, and to skip the
	// assignment.
	SupportsSkipAssignment bool
	Reason                 string // v8+; logged
}

// JoinMember is a member as the leader's JoinGroup response lists it.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte // for the selected protocol
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err            *kerr.Error // nil: NONE
	MemberID       string
	Generation     int32 // -1 with an error
	ProtocolType   string
	Protocol       string // "" with an error: null on the wire from v7
	Leader         string
	SkipAssignment bool
	Members        []JoinMember // the leader's answer only
}

// JoinGroup handles a JoinGroup (Kafka's handleJoinGroup) and answers it
// through respond, exactly once: at once, or, if the member has to wait
// for the rebalance, when it completes, from whichever goroutine completes
// it. It never blocks. A waiting JoinGroup is an operation in the Rebalance
// purgatory, submitted through w (nil: directly).
//
// Errors: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
// COORDINATOR_NOT_AVAILABLE (closed), UNKNOWN_MEMBER_ID, MEMBER_ID_REQUIRED,
// FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED
// (WithMaxSize; with no member id, and a member refused leaves the
// group); a waiting JoinGroup may also get REBALANCE_IN_PROGRESS (the
// member sent another, or its wait ended without the rebalance answering
// it) and NOT_COORDINATOR (Close).
func (c *Coordinator) JoinGroup(req JoinRequest, respond func(JoinResult), w Waiter) {
	fail := func(err *kerr.Error) { respond(JoinResult{Err: err, MemberID: req.MemberID, Generation: -1}) }
	switch {
	case req.Group == "":
		fail(errInvalidGroup)
		return
	case req.SessionTimeout < c.cfg.minSession || req.SessionTimeout > c.cfg.maxSession:
		fail(kerr.InvalidSessionTimeout)
		return
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout
	}
	var a after
	// A group is created for a member without an id; a member with an
	// id joining a group that does not exist is unknown (Kafka's
	// getOrMaybeCreateGroup).
	g, err := c.lockGroup(req.Group, req.MemberID == "", &a)
	if g == nil {
		a.run()
		if err == nil {
			err = errUnknownMember
		}
		fail(err)
		return
	}
	res, j := c.joinLocked(g, &req, respond, &a)
	if j != nil {
		// A waiting JoinGroup is answered when the rebalance ends, by
		// g.joinDeadline at the latest; its own deadline is a safety net
		// past that (see joinWait).
		j.timeout = max(g.joinDeadline-c.clk.Now(), 0) + joinAnswerSlack
	}
	g.unlock()
	a.run()
	if j == nil {
		respond(res)
		return
	}
	var werr error
	if w != nil {
		werr = w.Wait(c.rebalance, j, j.timeout, []RebalanceKey{j.key})
	} else {
		_, werr = c.rebalance.TryCompleteElseWatch(j, j.timeout, j.key)
	}
	if werr != nil {
		// Not taken: the client has gone, or the coordinator closed.
		// Nothing else will complete j; answer it here, as its
		// OnComplete would.
		respond(c.settleJoin(j, werr))
	}
}

// joinLocked is the body of JoinGroup under the group's mutex. It returns
// the answer, or the joinWait the member waits in.
//
// REQUIRES: g.mu held.
func (c *Coordinator) joinLocked(g *group, req *JoinRequest, respond func(JoinResult), a *after) (JoinResult, *joinWait) {
	fail := JoinResult{MemberID: req.MemberID, Generation: -1}
	if !c.acceptJoiningLocked(g, req.MemberID) {
		// Kafka removes the member, if it is one: a rebalance takes the
		// first members to rejoin, up to the limit. Its answer names no
		// member.
		c.log.Info("group is full; refusing a member", zap.String("group", g.id), zap.String("member", req.MemberID),
			zap.Int("max", c.cfg.maxSize))
		g.removeLocked(req.MemberID, a)
		if g.st == PreparingRebalance {
			a.checkJoin(g)
		}
		return JoinResult{Err: kerr.GroupMaxSizeReached, Generation: -1}, nil
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		fail.Err = errInconsistent
		return fail, nil
	}
	park := func(m *member) *joinWait { return g.parkJoinLocked(m, respond, a) }
	var (
		res JoinResult
		j   *joinWait
	)
	switch _, pending := g.pending[req.MemberID]; {
	case req.MemberID == "":
		// A new member (Kafka's doNewMemberJoinGroup).
		prefix := req.ClientID
		if req.InstanceID != "" {
			prefix = req.InstanceID
		}
		id := newMemberID(prefix)
		switch old, known := g.static[req.InstanceID]; {
		case req.InstanceID != "" && known:
			res, j = c.replaceStaticMemberLocked(g, old, id, req, park, a)
		case req.InstanceID == "" && req.RequireKnownMemberID:
			// KIP-394: hand out the id and wait for the member to come
			// back with it, within its session timeout.
			g.pending[id] = struct{}{}
			c.schedulePendingLocked(g, id, req.SessionTimeout, a)
			res = JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}
		default:
			j = c.addMemberAndRebalanceLocked(g, id, req, park, a)
		}
	case pending:
		if req.InstanceID != "" {
			// Kafka throws IllegalStateException: a pending member is
			// never static. Its request handler answers that so.
			fail.Err = kerr.UnknownServerError
			return fail, nil
		}
		j = c.addMemberAndRebalanceLocked(g, req.MemberID, req, park, a)
	default:
		// A current member (Kafka's doCurrentMemberJoinGroup).
		if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
			fail.Err = err
			return fail, nil
		}
		m := g.members[req.MemberID]
		switch g.st {
		case PreparingRebalance:
			j = c.updateMemberAndRebalanceLocked(g, m, req, "member joining during PreparingRebalance", park, a)
		case CompletingRebalance:
			if m.matches(req.Protocols) {
				// It lost its JoinGroup response: the current generation.
				res = g.currentJoinResultLocked(m, m.id == g.leader)
			} else {
				j = c.updateMemberAndRebalanceLocked(g, m, req, "member changed its metadata during CompletingRebalance", park, a)
			}
		case Stable:
			if m.id == g.leader || !m.matches(req.Protocols) {
				// The leader rejoins to have the group rebalance (its
				// topics' metadata changed, say); anyone rejoining with
				// new metadata does too.
				j = c.updateMemberAndRebalanceLocked(g, m, req, "leader or changed member rejoining a Stable group", park, a)
			} else {
				res = g.currentJoinResultLocked(m, false)
			}
		default: // Empty cannot hold a member; Dead was excluded by lockGroup
			fail.Err = errUnknownMember
			return fail, nil
		}
	}
	if g.st == PreparingRebalance {
		a.checkJoin(g)
	}
	return res, j
}

// acceptJoiningLocked reports whether member id may join g under
// group.max.size (Kafka's acceptJoiningMember): an Empty group takes
// anyone; a rebalancing one its members already awaiting join, and others
// while fewer than the limit await (its size may be over the limit, if
// the limit was lowered, and counting who rejoined keeps the first ones);
// a CompletingRebalance or Stable one its members, and others while it is
// below the limit. A pending member (KIP-394) is not yet a member. O(1).
//
// REQUIRES: g.mu held.
func (c *Coordinator) acceptJoiningLocked(g *group, id string) bool {
	m := g.members[id]
	switch g.st {
	case PreparingRebalance:
		return (m != nil && m.join != nil) || g.awaiting < c.cfg.maxSize
	case CompletingRebalance, Stable:
		return m != nil || len(g.members) < c.cfg.maxSize
	default: // Empty; Dead is not locked
		return true
	}
}

// addMemberAndRebalanceLocked adds a member awaiting join and starts a
// rebalance if none is under way. Until its first rebalance completes, its
// session is Kafka's new-member join timeout (5 minutes): it cannot
// heartbeat without knowing its generation.
//
// REQUIRES: g.mu held.
func (c *Coordinator) addMemberAndRebalanceLocked(g *group, id string, req *JoinRequest, park func(*member) *joinWait, a *after) *joinWait {
	m := &member{
		id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		protocols: req.Protocols, session: req.SessionTimeout, rebalance: req.RebalanceTimeout, isNew: true,
	}
	if g.st == PreparingRebalance && g.gen == 0 {
		g.newMemberAdded = true // the initial delayed join waits once more
	}
	g.addLocked(m, req.ProtocolType)
	j := park(m)
	c.scheduleSessionLocked(g, m, newMemberJoinTimeout, a)
	c.maybePrepareRebalanceLocked(g, "adding member "+id, a)
	return j
}

// updateMemberAndRebalanceLocked records a current member's new
// protocols and timeouts and starts a rebalance if none is under way.
//
// REQUIRES: g.mu held.
func (c *Coordinator) updateMemberAndRebalanceLocked(g *group, m *member, req *JoinRequest, reason string, park func(*member) *joinWait, a *after) *joinWait {
	g.updateMemberLocked(m, req)
	j := park(m)
	c.maybePrepareRebalanceLocked(g, reason+"; client reason: "+req.Reason, a)
	return j
}

// replaceStaticMemberLocked gives a known static instance its new member
// id (Kafka's updateStaticMemberAndRebalance): requests still waiting under
// the old id are fenced. In a Stable group whose protocol would not change
// there is no rebalance: the member is told the current generation (and,
// with KIP-814, a leader to skip the assignment). Otherwise it waits for a
// rebalance, as a CompletingRebalance group must redo its assignment: the
// leader may have been given the old id.
//
// REQUIRES: g.mu held.
func (c *Coordinator) replaceStaticMemberLocked(g *group, oldID, newID string, req *JoinRequest, park func(*member) *joinWait, a *after) (JoinResult, *joinWait) {
	leaderBefore := g.leader
	m := g.members[oldID]
	g.answerJoinLocked(m, JoinResult{Err: errFenced, MemberID: oldID, Generation: -1}, a)
	g.answerSyncLocked(m, SyncResult{Err: errFenced}, a)
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[req.InstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		// Kafka leaves the old id pending, so that the delayed sync
		// expels a member that is there; the new id owes the SyncGroup.
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	a.checkSession(g, oldID) // the old id's session ends: no such member
	g.updateMemberLocked(m, req)
	c.scheduleSessionLocked(g, m, m.session, a)
	c.log.Info("static member rejoined with a new member id",
		zap.String("group", g.id), zap.String("instance", req.InstanceID),
		zap.String("old", oldID), zap.String("new", newID), zap.Stringer("state", g.st))

	switch g.st {
	case Stable:
		if g.selectProtocolLocked() == g.proto {
			// A coordinator that takes the group over must know the
			// new id (Kafka stores the group here too).
			g.storeQuietlyLocked("static member "+req.InstanceID+" has a new member id", a)
			res := g.currentJoinResultLocked(m, false)
			if req.SupportsSkipAssignment {
				res.SkipAssignment = g.leader == newID
				if res.SkipAssignment {
					res.Members = g.leaderViewLocked()
				}
			} else {
				// The old leader id: a rejoining leader must not think it
				// leads, as its assignment would not be sent to a Stable
				// group's members.
				res.Leader = leaderBefore
			}
			return res, nil
		}
		j := park(m)
		c.maybePrepareRebalanceLocked(g, "static member "+req.InstanceID+" changed the group's protocol", a)
		return JoinResult{}, j
	case CompletingRebalance:
		j := park(m)
		c.prepareRebalanceLocked(g, "static member "+req.InstanceID+" rejoined during CompletingRebalance", a)
		return JoinResult{}, j
	default: // PreparingRebalance: it joins the rebalance under way
		return JoinResult{}, park(m)
	}
}

// parkJoinLocked makes m await join in a new joinWait. A JoinGroup it was
// already waiting in is answered REBALANCE_IN_PROGRESS: Kafka forgets it,
// which here would leave its connection's later answers stuck behind it.
//
// REQUIRES: g.mu held.
func (g *group) parkJoinLocked(m *member, respond func(JoinResult), a *after) *joinWait {
	g.answerJoinLocked(m, JoinResult{Err: errRebalance, MemberID: m.id, Generation: -1}, a)
	j := &joinWait{g: g, key: RebalanceKey{group: g.id, member: m.id, kind: memberJoinKey}, memberID: m.id, respond: respond}
	j.ShareLock(&g.mu)
	m.join = j
	g.awaiting++
	return j
}

// answerJoinLocked answers m's waiting JoinGroup, if any, with res. It
// reports whether there was one.
//
// REQUIRES: g.mu held.
func (g *group) answerJoinLocked(m *member, res JoinResult, a *after) bool {
	j := m.join
	if j == nil {
		return false
	}
	m.join = nil
	g.awaiting--
	j.res = &res
	a.do(func() { g.c.rebalance.CheckAndComplete(j.key) })
	return true
}

// maybePrepareRebalanceLocked starts a rebalance unless one is under way.
//
// REQUIRES: g.mu held.
func (c *Coordinator) maybePrepareRebalanceLocked(g *group, reason string, a *after) {
	if g.canRebalance() {
		c.prepareRebalanceLocked(g, reason, a)
	}
}

// prepareRebalanceLocked starts a rebalance: the members' waiting
// SyncGroups are answered REBALANCE_IN_PROGRESS, and a delayed join waits
// for every member to rejoin, at most the rebalance timeout. An Empty
// group's first wait is the initial delay (Kafka's InitialDelayedJoin).
//
// REQUIRES: g.mu held.
func (c *Coordinator) prepareRebalanceLocked(g *group, reason string, a *after) {
	if g.st == CompletingRebalance {
		// Kafka's resetAndPropagateAssignmentError.
		for _, m := range g.members {
			m.assignment = nil
			if g.answerSyncLocked(m, SyncResult{Err: errRebalance}, a) {
				c.scheduleSessionLocked(g, m, m.session, a)
			}
		}
	}
	// The previous generation's delayed sync has nothing left to wait for.
	clear(g.pendingSync)
	if g.syncOp != nil {
		g.syncOp = nil
		a.checkSync(g)
	}
	rt := g.rebalanceTimeout()
	d := &delayedJoin{g: g}
	d.ShareLock(&g.mu)
	timeout := rt
	if g.st == Empty {
		d.initial = true
		d.delay = c.cfg.initialDelay
		d.remaining = max(rt-d.delay, 0)
		timeout = d.delay
		g.joinDeadline = c.clk.Now() + max(d.delay, rt)
	} else {
		g.joinDeadline = c.clk.Now() + rt
	}
	c.log.Info("preparing to rebalance group", zap.String("group", g.id), zap.Stringer("state", g.st),
		zap.Int32("generation", g.gen), zap.String("reason", reason))
	g.transitionLocked(PreparingRebalance, a)
	g.join = d
	submit(a, c.rebalance, d, timeout, RebalanceKey{group: g.id, kind: groupJoinKey})
}

// delayedJoin is Kafka's DelayedJoin, and with initial set its
// InitialDelayedJoin: it completes when every member has rejoined (never,
// for the initial one), or at its deadline. Its lock is the group's mutex.
type delayedJoin struct {
	operation.State
	g       *group
	initial bool
	// Initial only: this wait, and what is left of the rebalance timeout
	// for the waits that a member joining during it adds.
	delay, remaining time.Duration
}

// TryComplete reports whether every member rejoined; a delayed join that a
// newer one replaced completes without effect.
//
// REQUIRES: d.g.mu held (the operation's lock).
func (d *delayedJoin) TryComplete() bool {
	switch {
	case d.g.join != d:
		return true
	case d.initial:
		return false
	}
	return d.g.hasAllMembersJoined()
}

// OnComplete ends the rebalance (Kafka's onCompleteJoin), or, for an
// initial delayed join during which a member joined, waits once more.
func (d *delayedJoin) OnComplete() {
	if d.Outcome() == operation.Closed {
		return // Close answers the waiting JoinGroups
	}
	g, c := d.g, d.g.c
	var a after
	g.mu.Lock()
	if g.join == d && !c.closed.Load() {
		c.completeJoinLocked(g, d, &a)
	}
	g.unlock()
	a.run()
}

// OnExpiration does nothing: OnComplete did the work.
func (d *delayedJoin) OnExpiration() {}

// completeJoinLocked is Kafka's onCompleteJoin (and InitialDelayedJoin's
// onComplete): dynamic members that did not rejoin are removed, the next
// generation starts with a protocol and a leader, and every waiting
// JoinGroup is answered.
//
// REQUIRES: g.mu held, g.join == d.
func (c *Coordinator) completeJoinLocked(g *group, d *delayedJoin, a *after) {
	if d.initial && g.newMemberAdded && d.remaining != 0 {
		g.newMemberAdded = false
		next := &delayedJoin{g: g, initial: true, delay: min(c.cfg.initialDelay, d.remaining), remaining: max(d.remaining-d.delay, 0)}
		next.ShareLock(&g.mu)
		g.join = next
		submit(a, c.rebalance, next, next.delay, RebalanceKey{group: g.id, kind: groupJoinKey})
		return
	}
	g.join = nil
	for id, m := range g.members {
		if m.join == nil && m.instanceID == "" {
			c.log.Info("removing member that did not rejoin in time", zap.String("group", g.id), zap.String("member", id))
			g.removeLocked(id, a)
		}
	}
	if !g.maybeElectNewJoinedLeaderLocked() && len(g.members) > 0 {
		// Only static members are left and none rejoined: wait again;
		// their sessions expire meanwhile if they are gone.
		c.log.Warn("no member rejoined; waiting another rebalance timeout", zap.String("group", g.id))
		next := &delayedJoin{g: g}
		next.ShareLock(&g.mu)
		g.join = next
		rt := g.rebalanceTimeout()
		g.joinDeadline = c.clk.Now() + rt
		submit(a, c.rebalance, next, rt, RebalanceKey{group: g.id, kind: groupJoinKey})
		return
	}

	// Kafka's initNextGeneration.
	g.gen++
	clear(g.pendingSync)
	if len(g.members) == 0 {
		g.proto = ""
		g.transitionLocked(Empty, a)
		c.log.Info("group is now empty", zap.String("group", g.id), zap.Int32("generation", g.gen))
		g.storeQuietlyLocked("the group is Empty", a)
		return
	}
	g.proto = g.selectProtocolLocked()
	g.transitionLocked(CompletingRebalance, a)
	c.log.Info("stabilized group", zap.String("group", g.id), zap.Int32("generation", g.gen),
		zap.String("protocol", g.proto), zap.String("leader", g.leader), zap.Int("members", len(g.members)))
	for _, m := range g.sortedMembersLocked() {
		g.answerJoinLocked(m, g.currentJoinResultLocked(m, m.id == g.leader), a)
		c.scheduleSessionLocked(g, m, m.session, a)
		m.isNew = false
		g.pendingSync[m.id] = struct{}{}
	}
	// Every member owes a SyncGroup within the rebalance timeout (Kafka's
	// schedulePendingSync).
	s := &delayedSync{g: g, gen: g.gen}
	s.ShareLock(&g.mu)
	g.syncOp = s
	submit(a, c.rebalance, s, g.rebalanceTimeout(), RebalanceKey{group: g.id, kind: groupSyncKey})
}

// joinWait is one JoinGroup waiting for its rebalance: an operation in the
// Rebalance purgatory under its member's key, which the server ties to the
// request's connection (Waiter). The group answers it by setting res under
// its mutex and checking its key, and TryComplete sees res; every path that
// ends the member's wait does so (the rebalance completing, the member's
// removal or fencing, another JoinGroup from it).
//
// If it completes otherwise (its client went away, or it could not be
// submitted), the member stops awaiting join: a new member is removed, a
// known one is left for the delayed join to wait for (and remove, if it
// does not come back). Its deadline is a safety net, set a few seconds past
// the rebalance's own (the delayed join's, which answers it first);
// Close answers it NOT_COORDINATOR.
type joinWait struct {
	operation.State
	g        *group // immutable, as everything up to res
	key      RebalanceKey
	memberID string
	respond  func(JoinResult)
	timeout  time.Duration

	res *JoinResult // guarded by g.mu; set once
}

// TryComplete reports whether the group answered. REQUIRES: g.mu held.
func (j *joinWait) TryComplete() bool { return j.res != nil }

// OnComplete answers the request.
func (j *joinWait) OnComplete() { j.respond(j.g.c.settleJoin(j, nil)) }

// OnExpiration does nothing: OnComplete answered.
func (j *joinWait) OnExpiration() {}

// settleJoin returns j's answer: the group's, or, if the group gave none,
// the one for how j ended (submitErr: it could not be submitted), after
// withdrawing the member's join.
func (c *Coordinator) settleJoin(j *joinWait, submitErr error) JoinResult {
	g := j.g
	var a after
	g.mu.Lock()
	if j.res == nil {
		res := JoinResult{Err: errRebalance, MemberID: j.memberID, Generation: -1}
		closing := j.Outcome() == operation.Closed || errors.Is(submitErr, purgatory.ErrClosed) || c.closed.Load()
		if m := g.members[j.memberID]; m != nil && m.join == j {
			m.join = nil
			g.awaiting--
			switch {
			case closing:
			case m.isNew:
				c.log.Debug("removing new member whose JoinGroup ended unanswered", zap.String("group", g.id), zap.String("member", m.id))
				c.removeMemberAndUpdateLocked(g, m, "new member's JoinGroup ended unanswered", &a)
				res.Err = errUnknownMember
			default:
				// Its session was satisfied by the wait; it runs again.
				c.scheduleSessionLocked(g, m, m.session, &a)
			}
		}
		if closing {
			res.Err = errNotCoord
		}
		j.res = &res
	}
	res := *j.res
	g.unlock()
	a.run()
	return res
}
