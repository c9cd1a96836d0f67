package consumergroup

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// The member epochs a heartbeat carries besides a member's own (KIP-848).
const (
	JoinEpoch        = 0  // a member joining, or joining again
	LeaveEpoch       = -1 // a member leaving
	StaticLeaveEpoch = -2 // a static member leaving for now, keeping its partitions
)

// HeartbeatRequest is a ConsumerGroupHeartbeat. The pointer and nil fields
// are "unchanged since the last heartbeat", as on the wire.
type HeartbeatRequest struct {
	Version          int16
	Group            string
	MemberID         string
	MemberEpoch      int32
	InstanceID       string
	RackID           *string
	RebalanceTimeout int32    // ms; -1 unchanged
	SubscribedNames  []string // nil unchanged
	SubscribedRegex  *string
	ServerAssignor   *string
	Owned            Assignment // nil unchanged
	ClientID         string
	ClientHost       string
}

// HeartbeatResponse is a heartbeat's answer. Assignment is nil when it is
// not sent (it has not changed, and the member did not say what it owns).
type HeartbeatResponse struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        Assignment
}

// Heartbeat runs a member's heartbeat (Kafka's consumerGroupHeartbeat):
// it joins, leaves, or keeps its session and takes the next step towards
// its target assignment, and calls done with the answer once what it
// changed is durable in the store (WithStore), as Kafka's runtime answers
// a heartbeat once its records are replicated; at once without a store
// or a change. The error is a Kafka error; its message, if any, is the
// string (GROUP_MAX_SIZE_REACHED, a full group's: WithMaxSize). done is called exactly once, with no lock held, perhaps before
// Heartbeat returns, perhaps from another goroutine. O(the group's
// members and subscribed partitions) when the target assignment is
// computed again, O(the member's partitions) otherwise.
func (c *Coordinator) Heartbeat(req HeartbeatRequest, done func(HeartbeatResponse, *kerr.Error, string)) {
	if err, msg := c.validate(&req); err != nil {
		done(HeartbeatResponse{}, err, msg)
		return
	}
	for {
		join := req.MemberEpoch == JoinEpoch
		if join && c.cfg.owns != nil && !c.cfg.owns(req.Group) {
			done(HeartbeatResponse{}, kerr.NotCoordinator, "")
			return
		}
		g := c.lookup(req.Group, join)
		if g == nil {
			if req.MemberEpoch < 0 {
				done(HeartbeatResponse{}, kerr.GroupIDNotFound, "")
			} else {
				done(HeartbeatResponse{}, kerr.UnknownMemberID, "")
			}
			return
		}
		g.mu.Lock()
		if g.gone {
			g.mu.Unlock()
			continue // deleted meanwhile: look again
		}
		resp, err, msg, wait := c.heartbeatLocked(g, &req)
		empty := len(g.members) == 0
		g.mu.Unlock()
		if empty {
			c.emptied(g.id) // left, or a join that made the group failed
		}
		if wait == nil {
			done(resp, err, msg)
			return
		}
		wait(func(werr error) {
			if werr != nil {
				done(HeartbeatResponse{}, groupstore.Error(werr), "")
				return
			}
			done(resp, nil, "")
		})
		return
	}
}

// validate checks a heartbeat as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does, and compiles its
// regular expression once.
func (c *Coordinator) validate(req *HeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != JoinEpoch):
		return kerr.InvalidRequest, "MemberId can't be empty."
	case req.MemberEpoch < StaticLeaveEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberEpoch == StaticLeaveEpoch && req.InstanceID == "":
		return kerr.InvalidRequest, "InstanceId can't be null when leaving as a static member."
	case req.MemberEpoch == JoinEpoch && req.RebalanceTimeout == -1:
		return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == JoinEpoch && req.Owned.count() != 0:
		return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
	case req.MemberEpoch == JoinEpoch && req.SubscribedNames == nil && req.SubscribedRegex == nil:
		return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != "" && !slices.Contains(c.cfg.assignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " + joinNames(c.cfg.assignors) + "."
	}
	if req.SubscribedRegex != nil && *req.SubscribedRegex != "" {
		if _, err := regexp.Compile(anchored(*req.SubscribedRegex)); err != nil {
			return kerr.InvalidRegularExpression, "SubscribedTopicRegex `" + *req.SubscribedRegex + "` is not a valid regular expression: " + err.Error() + "."
		}
	}
	if req.MemberID == "" {
		req.MemberID = newMemberID() // v0 lets the coordinator pick it
	}
	req.Owned = req.Owned.normalize()
	return nil, ""
}

// heartbeatLocked is Heartbeat with the group's mutex held: it returns
// the answer and, if the heartbeat changed the group, the wait for the
// change to be durable, before which it must not be sent. A change the
// store refuses is answered its error.
//
// REQUIRES: g.mu held.
func (c *Coordinator) heartbeatLocked(g *group, req *HeartbeatRequest) (HeartbeatResponse, *kerr.Error, string, Pending) {
	var (
		resp HeartbeatResponse
		err  *kerr.Error
		msg  string
		m    *member
	)
	if req.MemberEpoch < 0 {
		resp, err, msg, m = c.leaveLocked(g, req)
	} else {
		resp, err, msg, m = c.beatLocked(g, req)
	}
	if err != nil {
		return resp, err, msg, nil
	}
	var ms []*member
	if m != nil {
		ms = append(ms, m)
	}
	// A new target's changes are in g.retargeted: storeLocked adds
	// those members.
	wait, serr := c.storeLocked(g, false, ms...)
	if serr != nil {
		return HeartbeatResponse{}, groupstore.Error(serr), "", nil
	}
	return resp, nil, "", wait
}

// beatLocked is a heartbeat at epoch 0 or above: it returns the answer
// and the member.
//
// REQUIRES: g.mu held.
func (c *Coordinator) beatLocked(g *group, req *HeartbeatRequest) (HeartbeatResponse, *kerr.Error, string, *member) {
	if err, msg := c.fullLocked(g, req.MemberID); err != nil {
		return HeartbeatResponse{}, err, msg, nil
	}
	m, joined, err := c.memberLocked(g, req)
	if err != nil {
		return HeartbeatResponse{}, err, "", nil
	}
	// Every heartbeat restarts the member's session: its one task is
	// moved in O(1), never a new one (Kafka's CoordinatorTimer keyed by
	// member). The timeout is positive, so Reschedule never runs the task
	// here, under the group's mutex, which the task takes.
	m.sessionDue = c.clk.Now() + c.cfg.session
	if _, err := c.tm.Reschedule(&m.session, c.cfg.session); err != nil {
		return HeartbeatResponse{}, kerr.CoordinatorNotAvailable, "", nil
	}
	prevAssigned := m.assigned.clone()
	prevEpoch := m.epoch
	// One bump whatever changed: a member joined, its subscription
	// changed, or the subscribed topics did.
	subscribed := c.subscribeLocked(g, m, req) || joined
	ts := c.cfg.topics()
	c.stepLocked(g, m, ts, subscribed, req.Owned)

	resp := HeartbeatResponse{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: c.cfg.heartbeat}
	if req.Owned != nil || req.MemberEpoch == JoinEpoch || m.epoch != prevEpoch || !m.assigned.equal(prevAssigned) {
		resp.Assignment = m.assigned.clone()
	}
	return resp, nil, "", m
}

// fullLocked answers GROUP_MAX_SIZE_REACHED if g has
// group.consumer.max.size members, classic ones included, and id is none
// of them (Kafka's throwIfConsumerGroupIsFull): checked before anything
// else of a heartbeat or JoinGroup but a leave, whatever its epoch, so a
// member it does not know is refused so rather than unknown. O(1).
//
// REQUIRES: g.mu held.
func (c *Coordinator) fullLocked(g *group, id string) (*kerr.Error, string) {
	if len(g.members) < c.cfg.maxSize || g.members[id] != nil {
		return nil, ""
	}
	return kerr.GroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", c.cfg.maxSize)
}

// memberLocked returns the member a heartbeat is from: joining (epoch 0),
// a new member, a known one joining again in place, or a static member
// taking over its instance's partitions; otherwise a known member whose
// epoch is its own, or the one before with no more than it was assigned
// (its last answer was lost).
//
// REQUIRES: g.mu held.
func (c *Coordinator) memberLocked(g *group, req *HeartbeatRequest) (m *member, joined bool, err *kerr.Error) {
	m = g.members[req.MemberID]
	if req.MemberEpoch != JoinEpoch {
		switch {
		case m == nil && req.InstanceID != "" && g.static[req.InstanceID] != "":
			return nil, false, kerr.FencedInstanceID
		case m == nil, m.classic != nil:
			// A classic member heartbeats with the classic Heartbeat.
			return nil, false, kerr.UnknownMemberID
		case req.InstanceID != "" && m.instanceID != req.InstanceID:
			return nil, false, kerr.FencedInstanceID
		case m.left:
			// Kafka keeps a static member that left at epoch -2:
			// any other epoch is ahead of it. It joins again.
			return nil, false, kerr.FencedMemberEpoch
		case req.MemberEpoch > m.epoch:
			return nil, false, kerr.FencedMemberEpoch
		case req.MemberEpoch < m.epoch && (req.MemberEpoch != m.prevEpoch || req.Owned == nil || !req.Owned.subsetOf(m.assigned)):
			return nil, false, kerr.FencedMemberEpoch
		}
		return m, false, nil
	}
	if req.InstanceID != "" {
		if prev := g.members[g.static[req.InstanceID]]; prev != nil && prev.id != req.MemberID {
			if !prev.left {
				return nil, false, kerr.UnreleasedInstanceID
			}
			return c.replaceStaticLocked(g, prev, req.MemberID), false, nil
		}
	}
	if m != nil {
		// Joining again with the same id: the member holds nothing now
		// (its owned partitions are empty), so it is given its target
		// again from scratch, the recovery of an answer it lost.
		g.setCurrentLocked(m, current{})
		m.left = false
		m.classic = nil // a classic member joining with the consumer protocol
		return m, false, nil
	}
	m = &member{id: req.MemberID, instanceID: req.InstanceID, g: g}
	m.initTimers(c)
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	c.log.Debug("consumer group member joined", zap.String("group", g.id), zap.String("member", m.id))
	return m, true, nil // a new member: the target must include it
}

// initTimers readies m's session and rebalance-timeout tasks.
func (m *member) initTimers(c *Coordinator) {
	m.session.Init(memberTimer{c: c, m: m})
	m.rebalance.Init(memberTimer{c: c, m: m, rebalance: true})
	m.classicWait.Init(memberTimer{c: c, m: m, classicWait: true})
}

// replaceStaticLocked gives the partitions, target and epoch of a static
// member that left for now to the member that joins with its instance id,
// without a new target: the group does not rebalance (KIP-345's promise,
// kept by KIP-848).
//
// REQUIRES: g.mu held.
func (c *Coordinator) replaceStaticLocked(g *group, prev *member, id string) *member {
	m := &member{id: id, instanceID: prev.instanceID, g: g, names: prev.names, regex: prev.regex, assignor: prev.assignor,
		rebalanceTimeout: prev.rebalanceTimeout, rackID: prev.rackID, prevEpoch: prev.prevEpoch}
	m.initTimers(c)
	cur := prev.current
	c.tm.Cancel(&prev.session)
	c.tm.Cancel(&prev.rebalance)
	c.tm.Cancel(&prev.classicWait)
	g.releaseLocked(prev)
	m.since = prev.since
	delete(g.members, prev.id)
	g.removed = append(g.removed, prev.id)
	g.members[id] = m
	g.static[m.instanceID] = id
	if t, ok := g.target[prev.id]; ok {
		g.target[id] = t
		delete(g.target, prev.id)
	}
	g.setCurrentLocked(m, cur)
	return m
}

// subscribeLocked takes what a heartbeat says of its member's
// subscription, rack, assignor and rebalance timeout, and reports whether
// its subscription changed (which bumps the group epoch).
//
// REQUIRES: g.mu held.
func (c *Coordinator) subscribeLocked(g *group, m *member, req *HeartbeatRequest) bool {
	changed := false
	if req.SubscribedNames != nil {
		names := slices.Clone(req.SubscribedNames)
		slices.Sort(names)
		names = slices.Compact(names)
		changed = changed || !slices.Equal(names, m.names)
		m.names = names
	}
	if req.SubscribedRegex != nil && *req.SubscribedRegex != m.regex {
		m.regex = *req.SubscribedRegex
		changed = true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor = *req.ServerAssignor
		changed = true
	}
	if req.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeout) * time.Millisecond
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.ClientID != "" {
		m.clientID, m.clientHost = req.ClientID, req.ClientHost
	}
	return changed
}

// leaveLocked takes a member out (epoch -1), or a static member out for
// now (epoch -2): it keeps its partitions and target until its session
// expires or its instance joins again.
//
// It returns the member if it stays (a static member that left for now).
//
// REQUIRES: g.mu held.
func (c *Coordinator) leaveLocked(g *group, req *HeartbeatRequest) (HeartbeatResponse, *kerr.Error, string, *member) {
	m := g.members[req.MemberID]
	if req.InstanceID != "" {
		sm := g.members[g.static[req.InstanceID]]
		switch {
		case sm == nil:
			return HeartbeatResponse{}, kerr.UnknownMemberID, "", nil
		case sm.id != req.MemberID:
			return HeartbeatResponse{}, kerr.FencedInstanceID, "", nil
		}
		m = sm
	}
	if m == nil {
		return HeartbeatResponse{}, kerr.UnknownMemberID, "", nil
	}
	resp := HeartbeatResponse{MemberID: m.id, MemberEpoch: req.MemberEpoch, HeartbeatInterval: c.cfg.heartbeat}
	if req.MemberEpoch == StaticLeaveEpoch {
		m.left = true
		c.tm.Cancel(&m.rebalance)
		m.rebalanceDue = 0
		c.log.Debug("static consumer group member left for now", zap.String("group", g.id), zap.String("member", m.id))
		return resp, nil, "", m
	}
	g.removeLocked(m, c.tm)
	c.log.Debug("consumer group member left", zap.String("group", g.id), zap.String("member", m.id), zap.Int32("group_epoch", g.epoch))
	return resp, nil, "", nil
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// stepLocked moves m one step towards its group's target, as a heartbeat
// (or a classic member's join) does: the group's epoch bumped once
// whatever changed (subscribed: a member joined or its subscription
// changed; or the subscribed topics did), the target computed at a new
// epoch, m's assignment reconciled with owned (what it says it owns, nil
// unchanged), and its rebalance timer armed. REQUIRES: g.mu held.
func (c *Coordinator) stepLocked(g *group, m *member, ts Topics, subscribed bool, owned Assignment) {
	if g.refreshTopicsLocked(ts, subscribed) || subscribed {
		g.epoch++
	}
	if g.epoch != g.targetEpoch {
		g.computeTargetLocked(ts, c.cfg.assignors)
	}
	next := reconcile(m.current, g.targetEpoch, g.target[m.id], owned, g.freeLocked(m.id))
	if next.epoch != m.epoch {
		m.prevEpoch = m.epoch
	}
	g.setCurrentLocked(m, next)
	c.armRebalanceLocked(m)
}
