package group

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// State is a group's state in the classic protocol (Kafka's GroupState).
type State uint8

// The states, named as Kafka names them on the wire (DescribeGroups,
// ListGroups).
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String returns Kafka's name of the state.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// from lists the states each state may be entered from (Kafka's
// validPreviousStates).
var from = [...][]State{
	Empty:               {PreparingRebalance},
	PreparingRebalance:  {Stable, CompletingRebalance, Empty},
	CompletingRebalance: {PreparingRebalance},
	Stable:              {CompletingRebalance},
	Dead:                {Stable, PreparingRebalance, CompletingRebalance, Empty, Dead},
}

// A Protocol is one of the protocols (assignors) a member supports, in
// its order of preference, with the member's metadata for it.
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is a member of a group (Kafka's MemberMetadata). Every field is
// guarded by its group's mutex.
type member struct {
	id         string // changes when a static member is replaced
	instanceID string // "" for a dynamic member
	clientID   string
	clientHost string
	protocols  []Protocol
	session    time.Duration // session timeout
	rebalance  time.Duration // rebalance timeout
	assignment []byte
	seq        uint64 // join order: leader election and listings follow it

	// isNew is set until the member's first rebalance completes: its
	// session is Kafka's new-member join timeout meanwhile.
	isNew bool
	join  *joinWait        // its waiting JoinGroup; nil unless awaiting join
	sync  func(SyncResult) // its waiting SyncGroup; nil unless awaiting sync
	// epoch numbers the member's session operations: the one whose epoch
	// it is is current; any older one is satisfied (Kafka's
	// heartbeatSatisfied, as a counter so that no lock is held across the
	// complete-then-schedule of completeAndScheduleNextExpiration).
	epoch uint64
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether ps are the member's protocols, in order, with
// the same metadata.
func (m *member) matches(ps []Protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// satisfied reports whether the session operation numbered epoch no longer
// needs a heartbeat (Kafka's hasSatisfiedHeartbeat): a newer one replaced
// it, or the member waits in a JoinGroup or SyncGroup, which keeps it
// alive; a new member's wait does not.
func (m *member) satisfied(epoch uint64) bool {
	if m.epoch != epoch {
		return true
	}
	return !m.isNew && (m.join != nil || m.sync != nil)
}

// group is a consumer group (Kafka's GroupMetadata) with its offsets.
type group struct {
	id string       // immutable
	c  *Coordinator // immutable

	mu             sync.Mutex          // guards the following; the lock of every operation of the group
	st             State               // the state
	at             time.Duration       // when it entered st (Kafka's currentStateTimestamp)
	gen            int32               // generation
	ptype          string              // protocol type; "" until the first member
	proto          string              // selected protocol; "" outside a generation
	leader         string              // leader's member id; "" without members
	members        map[string]*member  // by member id
	static         map[string]string   // instance id → member id
	pending        map[string]struct{} // member ids handed out with MEMBER_ID_REQUIRED, not joined yet
	pendingSync    map[string]struct{} // members yet to send SyncGroup in this generation
	supported      map[string]int      // protocol name → members supporting it
	awaiting       int                 // members awaiting join
	newMemberAdded bool                // a member joined during the first, delayed rebalance
	seq            uint64              // last member's join order

	join         *delayedJoin  // the current rebalance's delayed join
	joinDeadline time.Duration // when the current rebalance ends at the latest
	syncOp       *delayedSync  // the current generation's wait for every SyncGroup

	offsets map[TopicPartition]*offset
	// commits numbers the group's commits, transactional or not, in the
	// order their records take in the log (offset.seq); pendingCommits
	// counts, by partition, the commits not yet durable
	// (Kafka's pendingOffsetCommits); clearedAt holds, for a partition
	// whose offset was deleted while commits of it were pending, the
	// number of the last commit appended before the deletion: those are
	// not applied when they become durable.
	commits        uint64
	pendingCommits map[TopicPartition]int
	clearedAt      map[TopicPartition]uint64
	// txns holds the offsets of open transactions, by producer id, until
	// their marker (Kafka's pendingTransactionalOffsetCommits); each
	// producer here is in the coordinator's index (Coordinator.producers)
	// and has at least one offset.
	txns     map[int64]map[TopicPartition]*offset
	expiry   *offsetExpiry // armed while Empty, unless no offset can expire
	expiryAt time.Duration
	// metaStored is set once the store took the group's metadata
	// (storeGroupLocked), or the group was loaded with it.
	metaStored bool
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		id: id, c: c, st: Empty, at: c.clk.Now(),
		members: make(map[string]*member), static: make(map[string]string),
		pending: make(map[string]struct{}), pendingSync: make(map[string]struct{}),
		supported: make(map[string]int), offsets: make(map[TopicPartition]*offset),
		pendingCommits: make(map[TopicPartition]int), clearedAt: make(map[TopicPartition]uint64),
		txns: make(map[int64]map[TopicPartition]*offset),
	}
}

// transitionLocked moves the group to state to; an Empty group's offsets
// start (or stop) expiring.
//
// REQUIRES: g.mu held.
func (g *group) transitionLocked(to State, a *after) {
	if !slices.Contains(from[to], g.st) {
		panic(fmt.Sprintf("group %s: invalid transition from %s to %s", g.id, g.st, to))
	}
	was := g.st
	g.st, g.at = to, g.c.clk.Now()
	switch {
	case to == Empty:
		g.armExpiryLocked(a)
	case was == Empty:
		g.disarmExpiryLocked(a)
	}
}

func (g *group) canRebalance() bool { return slices.Contains(from[PreparingRebalance], g.st) }

// supportsProtocols reports whether a member of protocol type ptype with
// protocols ps may join: an Empty group takes any non-empty type and
// protocols; otherwise the type must be the group's and one of the
// protocols one that every member supports.
//
// REQUIRES: g.mu held.
func (g *group) supportsProtocols(ptype string, ps []Protocol) bool {
	if g.st == Empty {
		return ptype != "" && len(ps) > 0
	}
	if ptype != g.ptype {
		return false
	}
	for _, p := range ps {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// addLocked adds m, awaiting join with j (nil: not awaiting).
//
// REQUIRES: g.mu held.
func (g *group) addLocked(m *member, ptype string) {
	if m.instanceID != "" {
		if _, dup := g.static[m.instanceID]; dup {
			panic(fmt.Sprintf("group %s: instance %s added twice", g.id, m.instanceID))
		}
		g.static[m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.ptype = ptype
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.seq++
	m.seq = g.seq
	g.members[m.id] = m
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	delete(g.pending, m.id)
}

// removeLocked takes member id out of the group, and answers whatever it
// waits in: a removed member's JoinGroup and SyncGroup get
// UNKNOWN_MEMBER_ID (Kafka drops a removed member's SyncGroup; here every
// request is answered once).
//
// REQUIRES: g.mu held.
func (g *group) removeLocked(id string, a *after) {
	m := g.members[id]
	if m == nil {
		delete(g.pending, id)
		return
	}
	g.answerJoinLocked(m, JoinResult{Err: errUnknownMember, Generation: -1}, a)
	g.answerSyncLocked(m, SyncResult{Err: errUnknownMember}, a)
	delete(g.members, id)
	for _, p := range m.protocols {
		if g.supported[p.Name]--; g.supported[p.Name] == 0 {
			delete(g.supported, p.Name)
		}
	}
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
	if g.leader == id {
		g.leader = ""
		if first := g.firstMemberLocked(nil); first != nil {
			g.leader = first.id
		}
	}
	a.checkSession(g, id) // its session completes: it is no member
}

// firstMemberLocked returns the earliest-joined member that ok accepts
// (any, with a nil ok), or nil. O(members).
//
// REQUIRES: g.mu held.
func (g *group) firstMemberLocked(ok func(*member) bool) *member {
	var first *member
	for _, m := range g.members {
		if (ok == nil || ok(m)) && (first == nil || m.seq < first.seq) {
			first = m
		}
	}
	return first
}

// sortedMembersLocked returns the members in join order.
//
// REQUIRES: g.mu held.
func (g *group) sortedMembersLocked() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(x, y *member) int { return cmp.Compare(x.seq, y.seq) })
	return ms
}

// updateMemberLocked gives m new protocols and timeouts (Kafka's
// updateMember, without the callback: see parkJoinLocked).
//
// REQUIRES: g.mu held.
func (g *group) updateMemberLocked(m *member, req *JoinRequest) {
	for _, p := range m.protocols {
		if g.supported[p.Name]--; g.supported[p.Name] == 0 {
			delete(g.supported, p.Name)
		}
	}
	m.protocols = req.Protocols
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	m.session, m.rebalance = req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
}

// hasAllMembersJoined reports whether every member awaits join and no
// pending member is still to come.
//
// REQUIRES: g.mu held.
func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.awaiting && len(g.pending) == 0
}

// rebalanceTimeout is the longest rebalance timeout of the members.
//
// REQUIRES: g.mu held.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// selectProtocolLocked picks the protocol of the next generation, as Kafka
// does: among the protocols every member supports, each member votes for
// the one it prefers most, and the most votes win. Kafka breaks a tie
// arbitrarily; here the earliest-joined member's vote among the tied wins.
//
// REQUIRES: g.mu held, and at least one member.
func (g *group) selectProtocolLocked() string {
	n := len(g.members)
	votes := make(map[string]int)
	var order []string // protocols in the order of their first vote
	for _, m := range g.sortedMembersLocked() {
		for _, p := range m.protocols {
			if g.supported[p.Name] == n {
				if votes[p.Name] == 0 {
					order = append(order, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, p := range order {
		if best == "" || votes[p] > votes[best] {
			best = p
		}
	}
	return best
}

// isStaticMemberFenced reports whether instance is known under another
// member id than id.
//
// REQUIRES: g.mu held.
func (g *group) isStaticMemberFenced(instance, id string) bool {
	if instance == "" {
		return false
	}
	cur, ok := g.static[instance]
	return ok && cur != id
}

// validateMemberLocked checks that id is a member and, when instance is
// set, that instance is known under id (Kafka's validateCurrentMember).
//
// REQUIRES: g.mu held.
func (g *group) validateMemberLocked(id, instance string) *kerr.Error {
	if instance != "" {
		cur, ok := g.static[instance]
		switch {
		case !ok:
			return errUnknownMember
		case cur != id:
			return errFenced
		}
		return nil
	}
	if g.members[id] == nil {
		return errUnknownMember
	}
	return nil
}

// maybeElectNewJoinedLeaderLocked makes sure the leader is a member that
// rejoined, choosing the earliest-joined one that did if the leader did
// not. It reports false if no member rejoined.
//
// REQUIRES: g.mu held.
func (g *group) maybeElectNewJoinedLeaderLocked() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].join != nil {
		return true
	}
	m := g.firstMemberLocked(func(m *member) bool { return m.join != nil })
	if m == nil {
		return false
	}
	g.c.log.Info("leader did not rejoin; electing a member that did",
		zap.String("group", g.id), zap.String("old", g.leader), zap.String("new", m.id))
	g.leader = m.id
	return true
}

// leaderViewLocked is what the leader's JoinGroup carries: every member
// with its metadata for the selected protocol (Kafka's
// currentMemberMetadata).
//
// REQUIRES: g.mu held.
func (g *group) leaderViewLocked() []JoinMember {
	ms := g.sortedMembersLocked()
	out := make([]JoinMember, len(ms))
	for i, m := range ms {
		out[i] = JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.proto)}
	}
	return out
}

// currentJoinResult is the answer to a member joining a generation already
// chosen (a rejoin during CompletingRebalance or Stable that changes
// nothing); the leader also gets the members.
//
// REQUIRES: g.mu held.
func (g *group) currentJoinResultLocked(m *member, withMembers bool) JoinResult {
	res := JoinResult{
		MemberID: m.id, Generation: g.gen, ProtocolType: g.ptype, Protocol: g.proto, Leader: g.leader,
	}
	if withMembers {
		res.Members = g.leaderViewLocked()
	}
	return res
}
