package sharegroup

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// Kafka's defaults.
const (
	DefaultSessionTimeout    = 45 * time.Second // group.share.session.timeout.ms
	DefaultHeartbeatInterval = 5 * time.Second  // group.share.heartbeat.interval.ms
	DefaultMaxSize           = 200              // group.share.max.size
)

// TopicInfo is what the assignor needs of a subscribed topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// Config is what a Coordinator runs with.
type Config struct {
	// Timer holds the members' sessions; required, not closed by the
	// Coordinator.
	Timer *timer.Timer
	// Topic resolves a subscribed topic's id and partition count; false
	// for a topic that does not exist (yet), which is assigned nothing.
	Topic func(name string) (TopicInfo, bool)
	// Left is told of each member that leaves its group or whose session
	// expires (nil: nobody listens).
	Left func(group, member string)
	// Store, if set, keeps the groups (store.go): each change of a group
	// is appended to it, and a heartbeat answered once its change is
	// durable. nil: the groups live in this Coordinator's memory alone.
	Store Store
	// Owns says which groups the Coordinator may create (in the broker,
	// those of the offsets partitions it leads and has loaded): a join to
	// another is NOT_COORDINATOR, so that a heartbeat racing the unload
	// of its partition leaves no group behind. nil: every group.
	Owns func(group string) bool
	// SessionTimeout, HeartbeatInterval and MaxSize default to Kafka's
	// (group.share.session.timeout.ms, group.share.heartbeat.interval.ms,
	// group.share.max.size). A group with MaxSize members answers the
	// heartbeat of any member it does not have GROUP_MAX_SIZE_REACHED
	// (ErrGroupMaxSize), whatever its epoch, as Kafka's
	// throwIfShareGroupIsFull does.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	MaxSize           int
	// Timeouts, if set, returns a group's own session timeout and
	// heartbeat interval (Kafka's share.session.timeout.ms and
	// share.heartbeat.interval.ms group configs), each zero where the
	// group has none: SessionTimeout's or HeartbeatInterval's then. It is
	// called at each heartbeat and load of a member, perhaps with the
	// Coordinator's lock held, so that a change applies from the member's
	// next heartbeat: it must not call back into the Coordinator.
	Timeouts func(group string) (session, interval time.Duration)
}

// Coordinator holds the share groups. Its methods are safe for concurrent
// use.
type Coordinator struct {
	cfg Config // immutable

	mu     sync.Mutex // guards the following
	groups map[string]*group
	// ids mirrors groups' keys, written with mu held (putLocked,
	// deleteLocked), read without it: Exists, which every OffsetCommit and
	// OffsetFetch asks (one group id names one group type), must not wait
	// for mu, held through share heartbeats' store appends.
	ids    sync.Map
	nextID uint64 // for members of version 0, which make no id
}

// New returns a Coordinator with cfg's settings.
func New(cfg Config) (*Coordinator, error) {
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.MaxSize < 0 {
		return nil, fmt.Errorf("%w: max size %d is negative", ErrInvalidConfig, cfg.MaxSize)
	}
	if cfg.Timer == nil || cfg.Topic == nil {
		return nil, fmt.Errorf("%w: a timer and a topic resolver are required", ErrInvalidConfig)
	}
	if cfg.HeartbeatInterval >= cfg.SessionTimeout {
		return nil, fmt.Errorf("%w: heartbeat interval %v not below session timeout %v", ErrInvalidConfig,
			cfg.HeartbeatInterval, cfg.SessionTimeout)
	}
	return &Coordinator{cfg: cfg, groups: make(map[string]*group)}, nil
}

// timeouts returns group's session timeout and heartbeat interval: its
// own (Config.Timeouts), or the Coordinator's.
func (c *Coordinator) timeouts(group string) (session, interval time.Duration) {
	session, interval = c.cfg.SessionTimeout, c.cfg.HeartbeatInterval
	if c.cfg.Timeouts == nil {
		return session, interval
	}
	s, i := c.cfg.Timeouts(group)
	if s > 0 {
		session = s
	}
	if i > 0 {
		interval = i
	}
	return session, interval
}

// group is one share group.
type group struct {
	id      string
	epoch   int32 // the group epoch, bumped by each change of members, subscriptions or topics
	members map[string]*member
	// topics are the subscribed topics as last resolved, topicsHash
	// their hash as last assigned (groupstore.TopicsHash): a change of
	// their ids or partition counts bumps the epoch.
	topics     map[string]TopicInfo
	topicsHash uint64
	// target is each member's assignment at epoch targetEpoch.
	targetEpoch int32
	target      map[string]Assignment
	// stored is the metadata last stored (nil: none yet), removed the
	// members removed since the group was last stored.
	stored  *StoredGroup
	removed []string
}

func newGroup(id string) *group {
	return &group{id: id, members: make(map[string]*member), topics: make(map[string]TopicInfo),
		target: make(map[string]Assignment)}
}

// Assignment is a member's partitions, by topic id.
type Assignment map[[16]byte][]int32

// member is one member of a share group.
type member struct {
	task       timer.Task // its session
	c          *Coordinator
	group      string
	id         string
	epoch      int32
	rack       string
	clientID   string
	clientHost string
	topics     []string // subscribed, sorted
	assigned   Assignment
	stored     *StoredMember // as last stored; nil: not yet
}

// Run expires the member's session, on a timer worker.
func (m *member) Run() { m.c.expire(m) }

// Member describes one member (ShareGroupDescribe).
type Member struct {
	ID, Rack, ClientID, ClientHost string
	Epoch                          int32
	Topics                         []string
	Assignment                     Assignment
}

// Description describes one share group.
type Description struct {
	ID          string
	State       string // Empty or Stable
	Epoch       int32
	TargetEpoch int32
	Members     []Member
}

// Exists reports whether group is a share group.
func (c *Coordinator) Exists(group string) bool {
	_, ok := c.ids.Load(group)
	return ok
}

// putLocked makes g the group of its id. REQUIRES: c.mu held.
func (c *Coordinator) putLocked(g *group) {
	c.groups[g.id] = g
	c.ids.Store(g.id, struct{}{})
}

// deleteLocked forgets the group id. REQUIRES: c.mu held.
func (c *Coordinator) deleteLocked(id string) {
	delete(c.groups, id)
	c.ids.Delete(id)
}

// Groups returns the share groups' ids, sorted.
func (c *Coordinator) Groups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Describe describes group; false when it is not a share group.
func (c *Coordinator) Describe(id string) (Description, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return Description{}, false
	}
	d := Description{ID: id, State: "Empty", Epoch: g.epoch, TargetEpoch: g.targetEpoch}
	if len(g.members) > 0 {
		d.State = "Stable"
	}
	for _, m := range g.members {
		d.Members = append(d.Members, Member{ID: m.id, Rack: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
			Epoch: m.epoch, Topics: slices.Clone(m.topics), Assignment: m.assigned})
	}
	slices.SortFunc(d.Members, func(a, b Member) int { return cmpString(a.ID, b.ID) })
	return d, true
}

// Delete deletes group, which must have no members: false when it has
// some (NON_EMPTY_GROUP), or is not a share group (found false). Its
// tombstones are appended to the Store.
func (c *Coordinator) Delete(id string) (found, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return false, false
	}
	if len(g.members) > 0 {
		return true, false
	}
	c.storeGoneLocked(g)
	c.deleteLocked(id)
	return true, true
}

// Close cancels every member's session; the Coordinator answers nothing
// afterwards that would schedule one.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		for _, m := range g.members {
			c.cfg.Timer.Cancel(&m.task)
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Ensure makes group, empty, if it is not a share group yet (Kafka's
// AlterShareGroupOffsets does, so that offsets can be set before any
// member joins), and reports whether it has no member.
func (c *Coordinator) Ensure(id string) (empty bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		g = newGroup(id)
		c.putLocked(g)
		c.storeQuietlyLocked(g)
	}
	return len(g.members) == 0
}
