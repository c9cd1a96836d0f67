package consumergroup

import (
	"maps"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
	"github.com/gopurgatory/purgatory/timer"
)

// member is one consumer of a group (Kafka's ConsumerGroupMember).
type member struct {
	id, instanceID, rackID string
	clientID, clientHost   string
	names                  []string // subscribed topic names, sorted
	regex                  string   // subscribed regular expression, "" for none
	assignor               string   // the server assignor it asks for, "" for none
	rebalanceTimeout       time.Duration
	// classic is set for a member of the classic protocol (classic.go):
	// its session timeout and protocols; nil for a consumer-protocol
	// member.
	classic *ClassicMember

	current         // its reconciliation (reconcile.go)
	prevEpoch int32 // the epoch before the last change, for a lost answer
	// since is the member epoch each partition it holds (assigned, or
	// to revoke) was given to it at, its assignment epoch (KIP-1251):
	// an offset commit at an older member epoch is taken for the
	// partitions it already had then.
	since          map[TopicID]map[int32]int32
	left           bool // a static member that left for now (epoch -2)
	session        timer.Task
	sessionDue     time.Duration // the clock's time the session expires at
	rebalance      timer.Task
	rebalanceDue   time.Duration // 0: no rebalance timeout running
	rebalanceEpoch int32         // the epoch the rebalance timeout was set at
	// classicWait is a classic member's wait for its next JoinGroup
	// (told to rejoin) or SyncGroup (joined), due at classicDue (0: none
	// running): Kafka's join and sync timeouts (classic.go).
	classicWait timer.Task
	classicDue  time.Duration
	stored      *StoredMember // as last appended to the store; nil: never

	g *group
}

// group is a consumer group (Kafka's ConsumerGroup).
type group struct {
	id string

	mu sync.Mutex // guards the following; taken before Coordinator.mu
	// epoch is the group epoch: bumped whenever the target assignment
	// must be computed again (a member joins, leaves or changes its
	// subscription; a subscribed topic appears or grows).
	epoch int32
	// targetEpoch is the epoch of target, the assignment epoch.
	targetEpoch int32
	target      map[string]Assignment // by member id
	assignor    string                // the assignor target was computed with
	members     map[string]*member
	static      map[string]string // instance id → member id
	// owners is who holds each partition: assigned to it, or still to
	// be revoked by it. A partition is free when it is not here.
	owners map[TopicID]map[int32]string
	// topicsVersion is the Topics version the group last checked its
	// subscriptions against; resolved are its regular expressions'
	// topics then, and topicsHash the hash of its subscribed topics' ids
	// and partition counts, whose change bumps the epoch.
	topicsVersion uint64
	resolved      map[string][]string
	topicsHash    uint64
	gone          bool // deleted or unloaded: a caller that found it looks again
	// stored is the metadata last appended to the store (nil: never),
	// removed the members removed since, retargeted those whose target
	// a new target assignment changed since, and unstored whether an
	// append was refused since: the next looks at every member
	// (store.go).
	stored     *StoredGroup
	removed    []string
	retargeted []string
	unstored   bool
}

func newGroup(id string) *group {
	return &group{id: id, target: map[string]Assignment{}, members: map[string]*member{}, static: map[string]string{},
		owners: map[TopicID]map[int32]string{}, resolved: map[string][]string{}}
}

// freeLocked returns whether a partition is free for member m: no
// other member holds it.
//
// REQUIRES: g.mu held.
func (g *group) freeLocked(m string) func(TopicID, int32) bool {
	return func(id TopicID, p int32) bool {
		o, ok := g.owners[id][p]
		return !ok || o == m
	}
}

// setCurrentLocked gives m its next reconciliation, moving the
// partitions it holds in g.owners.
//
// REQUIRES: g.mu held.
func (g *group) setCurrentLocked(m *member, next current) {
	g.releaseLocked(m)
	since := make(map[TopicID]map[int32]int32, len(next.assigned))
	for _, a := range []Assignment{next.assigned, next.revoking} {
		for id, ps := range a {
			if g.owners[id] == nil {
				g.owners[id] = map[int32]string{}
			}
			if since[id] == nil {
				since[id] = make(map[int32]int32, len(ps))
			}
			for _, p := range ps {
				g.owners[id][p] = m.id
				// A partition it held already keeps the epoch it
				// was given at; a new one has the new epoch.
				e, held := m.since[id][p]
				if !held {
					e = next.epoch
				}
				since[id][p] = e
			}
		}
	}
	m.current, m.since = next, since
}

// releaseLocked gives up every partition m holds in g.owners.
//
// REQUIRES: g.mu held.
func (g *group) releaseLocked(m *member) {
	for _, a := range []Assignment{m.assigned, m.revoking} {
		for id, ps := range a {
			for _, p := range ps {
				if g.owners[id][p] == m.id {
					delete(g.owners[id], p)
				}
			}
			if len(g.owners[id]) == 0 {
				delete(g.owners, id)
			}
		}
	}
}

// subscribedLocked returns the topics m subscribes to: its names and what
// its regular expression resolved to, sorted, without duplicates.
//
// REQUIRES: g.mu held.
func (g *group) subscribedLocked(m *member) []string {
	out := slices.Clone(m.names)
	if m.regex != "" {
		out = append(out, g.resolved[m.regex]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// refreshTopicsLocked resolves the group's regular expressions again and
// hashes its subscribed topics, if the topics or the subscriptions
// changed since the last look, and reports whether the subscribed topics
// did (Kafka's subscription metadata, and its regular expressions resolved
// by the coordinator, KIP-848): the group epoch must then be bumped.
// Costs O(subscribed topics) when something changed, O(topics·expressions)
// more with expressions, O(1) otherwise.
//
// REQUIRES: g.mu held.
func (g *group) refreshTopicsLocked(ts Topics, subscriptionsChanged bool) bool {
	if !subscriptionsChanged && ts.Version() == g.topicsVersion {
		return false
	}
	g.topicsVersion = ts.Version()
	clear(g.resolved)
	var all []string
	for _, m := range g.members {
		if m.regex == "" {
			continue
		}
		if _, done := g.resolved[m.regex]; done {
			continue
		}
		if all == nil {
			all = ts.Names()
		}
		// Compiled once when the member subscribed; never fails here.
		re := regexp.MustCompile(anchored(m.regex))
		matched := []string{}
		for _, name := range all {
			if re.MatchString(name) {
				matched = append(matched, name)
			}
		}
		g.resolved[m.regex] = matched
	}
	h := g.hashLocked(ts)
	changed := h != g.topicsHash
	g.topicsHash = h
	return changed
}

// hashLocked hashes the group's subscribed topics that exist: name, id
// and partition count each. It runs at every join and subscription
// change, so it reads the members' names and resolved expressions in
// place: O(members + subscribed topics), one set and one slice.
//
// REQUIRES: g.mu held.
func (g *group) hashLocked(ts Topics) uint64 {
	set := map[string]struct{}{}
	for _, m := range g.members {
		for _, t := range m.names {
			set[t] = struct{}{}
		}
		if m.regex != "" {
			for _, t := range g.resolved[m.regex] {
				set[t] = struct{}{}
			}
		}
	}
	topics := make([]groupstore.Topic, 0, len(set))
	for name := range set {
		if t, ok := ts.Topic(name); ok {
			topics = append(topics, groupstore.Topic{Name: name, ID: t.ID, Partitions: t.Partitions})
		}
	}
	return groupstore.TopicsHash(topics)
}

// anchored makes a subscription's expression match whole topic names, as
// Kafka's RE2/J Pattern.matcher(topic).matches() does.
func anchored(re string) string { return `^(?:` + re + `)$` }

// computeTargetLocked computes the target assignment at the group epoch
// (Kafka's TargetAssignmentBuilder), with the assignor most members ask
// for, the default on a tie or if none asks, and notes the members whose
// target it changed (g.retargeted): only their records are written
// again, as Kafka's builder writes a target record only for a member
// whose assignment changed.
//
// REQUIRES: g.mu held.
func (g *group) computeTargetLocked(ts Topics, assignors []string) {
	votes := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	name := assignors[0]
	for _, a := range assignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	topics := map[string]TopicMeta{}
	specs := make([]MemberSpec, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		spec := MemberSpec{ID: id, Target: g.target[id]}
		for _, name := range g.subscribedLocked(m) {
			if t, ok := ts.Topic(name); ok && t.Partitions > 0 {
				topics[name] = t
				spec.Topics = append(spec.Topics, name)
			}
		}
		specs = append(specs, spec)
	}
	target := Assignors()[name].Assign(specs, topics)
	for _, spec := range specs {
		if prev, ok := g.target[spec.ID]; !ok || !prev.equal(target[spec.ID]) {
			g.retargeted = append(g.retargeted, spec.ID)
		}
	}
	g.target = target
	g.assignor = name
	g.targetEpoch = g.epoch
}

// removeLocked removes m from the group: its partitions are free, its
// timers cancelled, and the group epoch bumped so that the others get
// its partitions (Kafka's fencing of a member).
//
// REQUIRES: g.mu held.
func (g *group) removeLocked(m *member, tm *timer.Timer) {
	tm.Cancel(&m.session)
	tm.Cancel(&m.rebalance)
	tm.Cancel(&m.classicWait)
	g.releaseLocked(m)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	g.removed = append(g.removed, m.id)
	g.epoch++
}

// State is a consumer group's state, as ConsumerGroupDescribe and
// ListGroups show it.
type State string

// The states of a consumer group (Kafka's ConsumerGroupState).
const (
	Empty       State = "Empty"
	Assigning   State = "Assigning"
	Reconciling State = "Reconciling"
	Stable      State = "Stable"
)

// stateLocked is the group's state: Empty without members, Assigning
// until its target is at the group epoch, Reconciling until every member
// is Stable at the target's epoch.
//
// REQUIRES: g.mu held.
func (g *group) stateLocked() State {
	switch {
	case len(g.members) == 0:
		return Empty
	case g.epoch != g.targetEpoch:
		return Assigning
	}
	for _, m := range g.members {
		if !m.left && (m.state != stable || m.epoch != g.targetEpoch) {
			return Reconciling
		}
	}
	return Stable
}
