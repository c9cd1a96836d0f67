package sharegroup

import (
	"fmt"
	"maps"
	"slices"
)

// HeartbeatRequest is a ShareGroupHeartbeat as the Coordinator reads it.
type HeartbeatRequest struct {
	Group    string
	MemberID string // "" for a version 0 member joining: one is made
	Epoch    int32  // 0 joins, -1 leaves
	Rack     *string
	// Topics is the subscription; nil leaves it unchanged (required on
	// joining).
	Topics               []string
	ClientID, ClientHost string
}

// HeartbeatResponse is what the Coordinator answers a heartbeat.
type HeartbeatResponse struct {
	MemberID string
	Epoch    int32
	// Assignment is the member's new assignment, nil when unchanged since
	// its last heartbeat.
	Assignment Assignment
}

// Heartbeat joins, keeps alive or removes a member, as its epoch says, and
// answers its epoch and, when changed, its assignment. Errors are Kafka's
// (errors.go). O(members × subscribed partitions) when the group changes,
// O(subscribed topics) otherwise.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) (HeartbeatResponse, error) {
	if req.Epoch == -1 {
		return HeartbeatResponse{MemberID: req.MemberID, Epoch: -1}, c.leave(req.Group, req.MemberID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
	}
	joining := req.Epoch == 0
	switch {
	case req.Epoch < 0:
		return HeartbeatResponse{}, ErrInvalidRequest
	case joining && req.Topics == nil && m == nil:
		return HeartbeatResponse{}, fmt.Errorf("%w: a joining member names its subscribed topics", ErrInvalidRequest)
	case !joining && m == nil:
		return HeartbeatResponse{}, ErrUnknownMember
	case !joining && req.Epoch != m.epoch:
		return HeartbeatResponse{}, ErrFencedMemberEpoch
	}
	if g == nil {
		g = &group{id: req.Group, members: make(map[string]*member), topics: make(map[string]TopicInfo)}
		c.groups[req.Group] = g
	}
	changed := false
	if m == nil {
		if len(g.members) >= c.cfg.MaxSize {
			return HeartbeatResponse{}, ErrGroupMaxSize
		}
		id := req.MemberID
		if id == "" {
			c.nextID++
			id = fmt.Sprintf("share-%d-%s", c.nextID, req.ClientID)
		}
		m = &member{c: c, group: g.id, id: id}
		m.task.Init(m)
		g.members[id] = m
		changed = true
	}
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if req.Rack != nil {
		m.rack = *req.Rack
	}
	if req.Topics != nil {
		topics := slices.Sorted(slices.Values(req.Topics))
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics, changed = topics, true
		}
	}
	if c.refreshTopicsLocked(g) || changed {
		g.epoch++
		c.assignLocked(g)
	}
	resp := HeartbeatResponse{MemberID: m.id, Epoch: g.epoch}
	if joining || m.epoch != g.targetEpoch {
		m.assigned = g.target[m.id]
		if m.assigned == nil {
			m.assigned = Assignment{}
		}
		resp.Assignment = m.assigned
	}
	m.epoch = g.targetEpoch
	resp.Epoch = m.epoch
	// The session starts again; Reschedule schedules a task that was not
	// pending (a new member). O(1).
	_, _ = c.cfg.Timer.Reschedule(&m.task, c.cfg.SessionTimeout)
	return resp, nil
}

// refreshTopicsLocked resolves the topics g's members subscribe to and
// reports whether any appeared, went or changed its partitions since g was
// last assigned. REQUIRES: c.mu held.
func (c *Coordinator) refreshTopicsLocked(g *group) bool {
	now := make(map[string]TopicInfo)
	for _, m := range g.members {
		for _, t := range m.topics {
			if _, seen := now[t]; seen {
				continue
			}
			if info, ok := c.cfg.Topic(t); ok {
				now[t] = info
			}
		}
	}
	if maps.Equal(now, g.topics) {
		return false
	}
	g.topics = now
	return true
}

// leave removes member from group.
func (c *Coordinator) leave(groupID, memberID string) error {
	c.mu.Lock()
	g := c.groups[groupID]
	var m *member
	if g != nil {
		m = g.members[memberID]
	}
	if m == nil {
		c.mu.Unlock()
		return ErrUnknownMember
	}
	c.cfg.Timer.Cancel(&m.task)
	c.removeLocked(g, m)
	c.mu.Unlock()
	c.left(groupID, memberID)
	return nil
}

// expire removes m, whose session expired, on a timer worker.
func (c *Coordinator) expire(m *member) {
	c.mu.Lock()
	g := c.groups[m.group]
	if g == nil || g.members[m.id] != m {
		c.mu.Unlock()
		return // it left as its session expired
	}
	c.removeLocked(g, m)
	c.mu.Unlock()
	c.left(m.group, m.id)
}

// removeLocked takes m out of g and assigns again. REQUIRES: c.mu held.
func (c *Coordinator) removeLocked(g *group, m *member) {
	delete(g.members, m.id)
	g.epoch++
	c.refreshTopicsLocked(g)
	c.assignLocked(g)
}

func (c *Coordinator) left(group, member string) {
	if c.cfg.Left != nil {
		c.cfg.Left(group, member)
	}
}
