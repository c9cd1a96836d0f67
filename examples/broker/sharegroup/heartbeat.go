package sharegroup

import (
	"fmt"
	"slices"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
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
	// HeartbeatInterval is the interval the member is told to heartbeat
	// at: its group's (Config.Timeouts), or the Coordinator's.
	HeartbeatInterval time.Duration
}

// Heartbeat joins, keeps alive or removes a member, as its epoch says, and
// calls done with its epoch and, when changed, its assignment, once what
// the heartbeat changed is durable in the Store (Config.Store), as Kafka's
// runtime answers a heartbeat once its records are replicated; at once
// without a store or a change. Errors are Kafka's (errors.go; a write's
// as groupstore.Error maps them). done is called exactly once, with no
// lock held, perhaps before Heartbeat returns, perhaps from another
// goroutine. O(members × subscribed partitions) when the group changes,
// O(subscribed topics) otherwise.
func (c *Coordinator) Heartbeat(req HeartbeatRequest, done func(HeartbeatResponse, error)) {
	var (
		resp HeartbeatResponse
		wait groupstore.Pending
		err  error
	)
	if req.Epoch == -1 {
		_, interval := c.timeouts(req.Group)
		resp = HeartbeatResponse{MemberID: req.MemberID, Epoch: -1, HeartbeatInterval: interval}
		wait, err = c.leave(req.Group, req.MemberID)
	} else {
		resp, wait, err = c.heartbeat(req)
	}
	switch {
	case err != nil:
		done(HeartbeatResponse{}, err)
	case wait == nil:
		done(resp, nil)
	default:
		wait(func(werr error) {
			if werr != nil {
				done(HeartbeatResponse{}, groupstore.Error(werr))
				return
			}
			done(resp, nil)
		})
	}
}

// heartbeat is Heartbeat for a member joining or staying: it returns the
// answer and the wait for the change to be durable, nil for none.
func (c *Coordinator) heartbeat(req HeartbeatRequest) (HeartbeatResponse, groupstore.Pending, error) {
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
		return HeartbeatResponse{}, nil, ErrInvalidRequest
	case joining && req.Topics == nil && m == nil:
		return HeartbeatResponse{}, nil, fmt.Errorf("%w: a joining member names its subscribed topics", ErrInvalidRequest)
	case g != nil && m == nil && len(g.members) >= c.cfg.MaxSize:
		// Kafka's throwIfShareGroupIsFull, before the member is looked
		// up: whatever its epoch.
		return HeartbeatResponse{}, nil, fmt.Errorf("%w: The share group has reached its maximum capacity of %d members.",
			ErrGroupMaxSize, c.cfg.MaxSize)
	case !joining && m == nil:
		return HeartbeatResponse{}, nil, ErrUnknownMember
	case !joining && req.Epoch != m.epoch:
		return HeartbeatResponse{}, nil, ErrFencedMemberEpoch
	case g == nil && c.cfg.Owns != nil && !c.cfg.Owns(req.Group):
		return HeartbeatResponse{}, nil, ErrNotCoordinator
	}
	if g == nil {
		g = newGroup(req.Group)
		c.putLocked(g)
	}
	changed := false
	if m == nil {
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
	session, interval := c.timeouts(g.id)
	resp := HeartbeatResponse{MemberID: m.id, Epoch: g.epoch, HeartbeatInterval: interval}
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
	_, _ = c.cfg.Timer.Reschedule(&m.task, session)
	// Not rolled back if refused, as consumergroup's: the member is
	// answered the error, and what was not stored goes with the group's
	// next change, or is lost with the partition, whose new leader loads
	// what the log has.
	wait, err := c.storeLocked(g)
	if err != nil {
		return HeartbeatResponse{}, nil, groupstore.Error(err)
	}
	return resp, wait, nil
}

// refreshTopicsLocked resolves the topics g's members subscribe to and
// reports whether any appeared, went or changed its partitions since g was
// last assigned (their hash changed). REQUIRES: c.mu held.
func (c *Coordinator) refreshTopicsLocked(g *group) bool {
	now := make(map[string]TopicInfo)
	var ts []groupstore.Topic
	for _, m := range g.members {
		for _, t := range m.topics {
			if _, seen := now[t]; seen {
				continue
			}
			if info, ok := c.cfg.Topic(t); ok {
				now[t] = info
				ts = append(ts, groupstore.Topic{Name: t, ID: info.ID, Partitions: info.Partitions})
			}
		}
	}
	g.topics = now
	h := groupstore.TopicsHash(ts)
	if h == g.topicsHash {
		return false
	}
	g.topicsHash = h
	return true
}

// leave removes member from group, and returns the wait for its
// tombstone to be durable.
func (c *Coordinator) leave(groupID, memberID string) (groupstore.Pending, error) {
	c.mu.Lock()
	g := c.groups[groupID]
	var m *member
	if g != nil {
		m = g.members[memberID]
	}
	if m == nil {
		c.mu.Unlock()
		return nil, ErrUnknownMember
	}
	c.cfg.Timer.Cancel(&m.task)
	c.removeLocked(g, m)
	wait, err := c.storeLocked(g)
	c.mu.Unlock()
	c.left(groupID, memberID)
	if err != nil {
		return nil, groupstore.Error(err)
	}
	return wait, nil
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
	c.storeQuietlyLocked(g)
	c.mu.Unlock()
	c.left(m.group, m.id)
}

// removeLocked takes m out of g and assigns again. REQUIRES: c.mu held.
func (c *Coordinator) removeLocked(g *group, m *member) {
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.stored != nil {
		g.removed = append(g.removed, m.id)
	}
	g.epoch++
	c.refreshTopicsLocked(g)
	c.assignLocked(g)
}

func (c *Coordinator) left(group, member string) {
	if c.cfg.Left != nil {
		c.cfg.Left(group, member)
	}
}
