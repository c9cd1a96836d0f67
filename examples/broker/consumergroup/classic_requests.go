package consumergroup

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
)

// ClassicJoinRequest is a classic member's JoinGroup to a consumer group.
type ClassicJoinRequest struct {
	Group, MemberID, InstanceID string
	ClientID, ClientHost        string
	ProtocolType                string
	Protocols                   []ClassicProtocol
	SessionTimeout              time.Duration
	RebalanceTimeout            time.Duration
	// RequireKnownMemberID: a dynamic member joining without an id is
	// answered MEMBER_ID_REQUIRED with one (JoinGroup v4+, KIP-394).
	RequireKnownMemberID bool
}

// ClassicJoinResponse is a JoinGroup's answer: the member's id, its
// epoch as the generation, and the protocol (its first).
type ClassicJoinResponse struct {
	MemberID     string
	Generation   int32
	ProtocolType string
	Protocol     string
}

// HasClassicMember reports whether group is a consumer group here with
// a classic member of that id, or of that instance id if not "". O(1).
func (c *Coordinator) HasClassicMember(group, memberID, instanceID string) bool {
	g := c.lookup(group, false)
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return false
	}
	if m := g.members[memberID]; m != nil && m.classic != nil {
		return true
	}
	m := g.members[g.static[instanceID]]
	return instanceID != "" && m != nil && m.classic != nil
}

// ClassicJoin runs a classic member's JoinGroup in a consumer group with
// members (Kafka's classicGroupJoinToConsumerGroup): the member joins,
// or joins again, subscribed to the topics of its first protocol's
// metadata, and takes its next step towards its target given the
// partitions that metadata says it owns. done is called once, with no
// lock held, once the change is durable. A group that does not exist (or
// has no members) is answered UNKNOWN_MEMBER_ID: the server gives its
// joins to the classic coordinator; a full one (WithMaxSize)
// GROUP_MAX_SIZE_REACHED for a member it does not have. O(the group's
// members and partitions) when the target is computed again.
func (c *Coordinator) ClassicJoin(req ClassicJoinRequest, done func(ClassicJoinResponse, *kerr.Error)) {
	g := c.lookup(req.Group, false)
	if g == nil {
		done(ClassicJoinResponse{MemberID: req.MemberID, Generation: -1}, kerr.UnknownMemberID)
		return
	}
	g.mu.Lock()
	if g.gone || len(g.members) == 0 {
		g.mu.Unlock()
		done(ClassicJoinResponse{MemberID: req.MemberID, Generation: -1}, kerr.UnknownMemberID)
		return
	}
	resp, err, m := c.classicJoinLocked(g, &req)
	var wait Pending
	if err == nil {
		var serr error
		// A new target's changes are in g.retargeted: storeLocked
		// adds those members.
		if wait, serr = c.storeLocked(g, false, m); serr != nil {
			err = groupstore.Error(serr)
		}
	}
	g.mu.Unlock()
	if err != nil || wait == nil {
		done(resp, err)
		return
	}
	wait(func(werr error) {
		if werr != nil {
			done(ClassicJoinResponse{MemberID: resp.MemberID, Generation: -1}, groupstore.Error(werr))
			return
		}
		done(resp, nil)
	})
}

// classicJoinLocked is ClassicJoin with the group's mutex held; it
// returns the answer and the member.
//
// REQUIRES: g.mu held.
func (c *Coordinator) classicJoinLocked(g *group, req *ClassicJoinRequest) (ClassicJoinResponse, *kerr.Error, *member) {
	fail := func(err *kerr.Error) (ClassicJoinResponse, *kerr.Error, *member) {
		return ClassicJoinResponse{MemberID: req.MemberID, Generation: -1}, err, nil
	}
	unknown := req.MemberID == ""
	id := req.MemberID
	if unknown {
		id = newMemberID()
	}
	// Kafka checks the group's size first, with the new id: a new member
	// of a full group gets no id to rejoin with.
	if err, _ := c.fullLocked(g, id); err != nil {
		return fail(err)
	}
	if req.ProtocolType != ClassicProtocolType || len(req.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol)
	}
	ts := c.cfg.topics()
	sub, derr := decodeSubscription(req.Protocols, ts)
	if derr != nil {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if unknown {
		if req.RequireKnownMemberID {
			return ClassicJoinResponse{MemberID: id, Generation: -1}, kerr.MemberIDRequired, nil
		}
	}
	m := g.members[id]
	joined := false
	switch {
	case req.InstanceID != "" && g.static[req.InstanceID] != "" && g.static[req.InstanceID] != id:
		if !unknown {
			return fail(kerr.FencedInstanceID)
		}
		// A static member joining again under a new id takes its
		// instance's partitions and target over, as in a heartbeat.
		m = c.replaceStaticLocked(g, g.members[g.static[req.InstanceID]], id)
	case m == nil:
		m = &member{id: id, instanceID: req.InstanceID, g: g}
		m.initTimers(c)
		g.members[id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = id
		}
		joined = true
	case m.classic == nil:
		return fail(kerr.InconsistentGroupProtocol) // a consumer-protocol member's id
	}
	m.left = false
	m.classic = &ClassicMember{SessionTimeout: req.SessionTimeout, Protocols: slices.Clone(req.Protocols)}
	if err := c.restartClassicSessionLocked(m); err != nil {
		return fail(err)
	}
	empty := ""
	subscribed := c.subscribeLocked(g, m, &HeartbeatRequest{SubscribedNames: sub.topics, SubscribedRegex: &empty,
		ServerAssignor: &empty, RackID: sub.rack, RebalanceTimeout: int32(req.RebalanceTimeout / time.Millisecond),
		ClientID: req.ClientID, ClientHost: req.ClientHost}) || joined
	c.stepLocked(g, m, ts, subscribed, sub.owned)
	c.awaitClassicLocked(m, true) // its SyncGroup, within its rebalance timeout
	c.logClassic("classic member joined the consumer group", g, m)
	return ClassicJoinResponse{MemberID: m.id, Generation: m.epoch, ProtocolType: ClassicProtocolType,
		Protocol: req.Protocols[0].Name}, nil, m
}

// ClassicSync answers a classic member's SyncGroup in a consumer group
// (Kafka's classicGroupSyncToConsumerGroup) with its assigned partitions
// in the ConsumerProtocol; the group's assignment its leader may send is
// ignored, as the coordinator assigns. Errors: UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, ILLEGAL_GENERATION (not its epoch),
// INCONSISTENT_GROUP_PROTOCOL (another protocol than it joined with),
// REBALANCE_IN_PROGRESS (the group epoch moved past it: it joins again).
// Nothing is stored. O(its partitions).
func (c *Coordinator) ClassicSync(group, memberID, instanceID string, generation int32, protocolType, protocol *string) ([]byte, *kerr.Error) {
	g := c.lookup(group, false)
	if g == nil {
		return nil, kerr.UnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return nil, kerr.UnknownMemberID
	}
	m, err := validateClassicMemberLocked(g, memberID, instanceID)
	switch {
	case err != nil:
		return nil, err
	case generation != m.epoch:
		return nil, kerr.IllegalGeneration
	case protocolType != nil && *protocolType != ClassicProtocolType,
		protocol != nil && *protocol != m.classic.Protocols[0].Name:
		return nil, kerr.InconsistentGroupProtocol
	case g.epoch > m.epoch && m.state != unrevokedPartitions:
		c.awaitClassicLocked(m, false) // its JoinGroup
		return nil, kerr.RebalanceInProgress
	}
	if err := c.restartClassicSessionLocked(m); err != nil {
		return nil, err
	}
	c.stopClassicWaitLocked(m)
	return encodeClassicAssignment(m.assigned, m.classic, c.cfg.topics()), nil
}

// ClassicHeartbeat runs a classic member's Heartbeat in a consumer group
// (Kafka's classicGroupHeartbeatToConsumerGroup): its session restarts,
// and it is answered REBALANCE_IN_PROGRESS when it must join again (the
// group epoch moved past it, it must revoke partitions, or those it
// waited for are free). Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// ILLEGAL_GENERATION. O(its target).
func (c *Coordinator) ClassicHeartbeat(group, memberID, instanceID string, generation int32) *kerr.Error {
	g := c.lookup(group, false)
	if g == nil {
		return kerr.UnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return kerr.UnknownMemberID
	}
	m, err := validateClassicMemberLocked(g, memberID, instanceID)
	switch {
	case err != nil:
		return err
	case generation != m.epoch:
		return kerr.IllegalGeneration
	}
	if err := c.restartClassicSessionLocked(m); err != nil {
		return err
	}
	if g.mustRejoinLocked(m) {
		c.awaitClassicLocked(m, false) // its JoinGroup
		return kerr.RebalanceInProgress
	}
	return nil
}

// ClassicLeave removes classic members of a consumer group (Kafka's
// classicGroupLeaveToConsumerGroup): each is UNKNOWN_MEMBER_ID if not a
// classic member here, FENCED_INSTANCE_ID if its instance is another
// member's; a static member may be named by its instance alone. The
// group epoch moves, so that the others get the partitions. done is
// called once, with no lock held, with each member's error once the
// change is durable (a refused change is every member's error).
func (c *Coordinator) ClassicLeave(group string, members []ClassicLeaver, done func([]*kerr.Error)) {
	errs := make([]*kerr.Error, len(members))
	g := c.lookup(group, false)
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		done(errs)
		return
	}
	g.mu.Lock()
	if g.gone {
		g.mu.Unlock()
		c.ClassicLeave(group, members, done) // deleted meanwhile: look again
		return
	}
	removed := false
	for i, l := range members {
		id := l.MemberID
		if id == "" && l.InstanceID != "" {
			id = g.static[l.InstanceID]
		}
		m, err := validateClassicMemberLocked(g, id, l.InstanceID)
		if err != nil {
			errs[i] = err
			continue
		}
		g.removeLocked(m, c.tm)
		removed = true
		c.logClassic("classic member left the consumer group", g, m)
	}
	var wait Pending
	if removed {
		var serr error
		if wait, serr = c.storeLocked(g, false); serr != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = groupstore.Error(serr)
				}
			}
		}
	}
	empty := len(g.members) == 0
	g.mu.Unlock()
	if empty {
		c.emptied(g.id)
	}
	if wait == nil {
		done(errs)
		return
	}
	wait(func(werr error) {
		if werr != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = groupstore.Error(werr)
				}
			}
		}
		done(errs)
	})
}

// ClassicLeaver names a classic member leaving: by member id, or by
// instance id alone (an administrator removing a static member).
type ClassicLeaver struct {
	MemberID, InstanceID string
}
