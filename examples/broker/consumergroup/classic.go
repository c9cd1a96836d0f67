package consumergroup

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// A consumer group may have classic members, as Kafka's has during an
// online upgrade or downgrade between the protocols (KIP-848): members
// of the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
// whose subscription and assignment are the classic ConsumerProtocol's,
// driven by this coordinator's target assignment as its own members
// are (Kafka's classicGroupJoinToConsumerGroup and its siblings):
//
//   - JoinGroup subscribes the member to the topics of its first
//     protocol's metadata and reconciles it with the partitions that
//     metadata says it owns (none from an eager client, which gave them
//     all up before it joined). It is answered at once, the generation
//     being the member's epoch.
//   - SyncGroup answers its assigned partitions, encoded in the
//     ConsumerProtocol: a partition it must revoke is not in it, so the
//     client gives it up, and joins again to take the next epoch.
//   - Heartbeat answers REBALANCE_IN_PROGRESS when the member must join
//     again: the group epoch moved past it, it has partitions to revoke,
//     or the partitions it waited for are free.
//   - LeaveGroup removes it, and its session is its classic session
//     timeout.
//
// Revocation, for a classic member, is a join: the rebalance timeout
// that fences a member slow to revoke runs for it too. So do Kafka's
// join and sync timeouts: a member told to rejoin must join, and one
// that joined must sync, within its rebalance timeout, or it is removed,
// however it heartbeats meanwhile (timers.go's third task).

// ClassicProtocolType is the protocol type of the classic members a
// consumer group takes: the Java consumer's ConsumerProtocol.
const ClassicProtocolType = "consumer"

// ClassicProtocol is one of a classic member's protocols (assignors),
// with its ConsumerProtocol subscription.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// ClassicMember is what a classic member of a consumer group has that a
// consumer-protocol member has not (Kafka's
// ConsumerGroupMemberMetadataValue.ClassicMemberMetadata): its session
// timeout and its protocols as it joined with them.
type ClassicMember struct {
	SessionTimeout time.Duration
	Protocols      []ClassicProtocol
}

func (cm *ClassicMember) clone() *ClassicMember {
	if cm == nil {
		return nil
	}
	out := &ClassicMember{SessionTimeout: cm.SessionTimeout, Protocols: make([]ClassicProtocol, len(cm.Protocols))}
	for i, p := range cm.Protocols {
		out.Protocols[i] = ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	return out
}

func (cm *ClassicMember) equal(o *ClassicMember) bool {
	if cm == nil || o == nil {
		return cm == o
	}
	return cm.SessionTimeout == o.SessionTimeout && slices.EqualFunc(cm.Protocols, o.Protocols, func(a, b ClassicProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// subscription is a classic member's ConsumerProtocol subscription.
type subscription struct {
	topics []string
	owned  Assignment
	rack   *string
}

// decodeSubscription reads the subscription of a classic member's first
// protocol, as Kafka's deserializeSubscription does; owned partitions of
// topics that do not exist are left out.
func decodeSubscription(ps []ClassicProtocol, ts Topics) (subscription, error) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(ps[0].Metadata); err != nil {
		return subscription{}, err
	}
	s := subscription{topics: md.Topics, owned: Assignment{}, rack: md.Rack}
	if s.topics == nil {
		s.topics = []string{}
	}
	for _, op := range md.OwnedPartitions {
		if t, ok := ts.Topic(op.Topic); ok {
			for _, p := range op.Partitions {
				s.owned.add(t.ID, p)
			}
		}
	}
	return s, nil
}

// decodeClassicAssignment reads a classic member's ConsumerProtocol
// assignment into partitions by topic id; topics that no longer exist
// are left out. An empty or unreadable assignment is none.
func decodeClassicAssignment(b []byte, ts Topics) Assignment {
	out := Assignment{}
	var ca kmsg.ConsumerMemberAssignment
	if len(b) == 0 || ca.ReadFrom(b) != nil {
		return out
	}
	for _, t := range ca.Topics {
		if tm, ok := ts.Topic(t.Topic); ok {
			for _, p := range t.Partitions {
				out.add(tm.ID, p)
			}
		}
	}
	return out
}

// encodeClassicAssignment writes a in the ConsumerProtocol, at the
// version of the member's subscription (Kafka's prepareAssignment, whose
// ConsumerProtocol versions the two alike), by topic name; a topic
// deleted meanwhile is left out.
func encodeClassicAssignment(a Assignment, cm *ClassicMember, ts Topics) []byte {
	ca := kmsg.NewConsumerMemberAssignment()
	var md kmsg.ConsumerMemberMetadata
	if len(cm.Protocols) > 0 && md.ReadFrom(cm.Protocols[0].Metadata) == nil {
		ca.Version = min(md.Version, 3)
	}
	for _, id := range a.Topics() {
		t, ok := ts.ByID(id)
		if !ok {
			continue
		}
		ct := kmsg.NewConsumerMemberAssignmentTopic()
		ct.Topic, ct.Partitions = t.Name, slices.Clone(a[id])
		ca.Topics = append(ca.Topics, ct)
	}
	slices.SortFunc(ca.Topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int {
		switch {
		case x.Topic < y.Topic:
			return -1
		case x.Topic > y.Topic:
			return 1
		}
		return 0
	})
	return ca.AppendTo(nil)
}

// validateClassicMemberLocked returns the classic member a SyncGroup,
// Heartbeat or LeaveGroup names, by instance id if it has one (Kafka's
// validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol):
// UNKNOWN_MEMBER_ID if there is none or it is not classic,
// FENCED_INSTANCE_ID if the instance is another member's.
//
// REQUIRES: g.mu held.
func validateClassicMemberLocked(g *group, memberID, instanceID string) (*member, *kerr.Error) {
	m := g.members[memberID]
	if instanceID != "" {
		m = g.members[g.static[instanceID]]
		if m != nil && m.id != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// restartClassicSessionLocked moves m's session its classic session
// timeout ahead.
//
// REQUIRES: m.g.mu held.
func (c *Coordinator) restartClassicSessionLocked(m *member) *kerr.Error {
	d := max(m.classic.SessionTimeout, minTimeout)
	m.sessionDue = c.clk.Now() + d
	if _, err := c.tm.Reschedule(&m.session, d); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// waitingOnUnreleasedLocked reports whether a partition of m's target it
// does not have is still held by another member (Kafka's
// waitingOnUnreleasedPartition): until then a rejoin gains it nothing.
//
// REQUIRES: g.mu held.
func (g *group) waitingOnUnreleasedLocked(m *member) bool {
	free := g.freeLocked(m.id)
	for id, ps := range g.target[m.id] {
		for _, p := range ps {
			if !m.assigned.has(id, p) && !free(id, p) {
				return true
			}
		}
	}
	return false
}

// mustRejoinLocked reports whether classic member m must join again
// (Heartbeat's REBALANCE_IN_PROGRESS): the group epoch moved past its
// epoch, it has partitions to revoke, or those it waited for are free.
//
// REQUIRES: g.mu held.
func (g *group) mustRejoinLocked(m *member) bool {
	return m.epoch < g.epoch || m.state == unrevokedPartitions ||
		m.state == unreleasedPartitions && !g.waitingOnUnreleasedLocked(m)
}

// logClassic logs a classic member's step.
func (c *Coordinator) logClassic(msg string, g *group, m *member) {
	c.log.Debug(msg, zap.String("group", g.id), zap.String("member", m.id), zap.Int32("member_epoch", m.epoch),
		zap.Int32("group_epoch", g.epoch))
}

// sortedUnique returns names sorted, without duplicates, never nil.
func sortedUnique(names []string) []string {
	out := append([]string{}, names...)
	slices.Sort(out)
	return slices.Compact(out)
}

// awaitClassicLocked starts m's wait for its next JoinGroup or SyncGroup
// (Kafka's consumer group join and sync timeouts for a classic member),
// of its rebalance timeout, unless one runs and restart is false: a
// member told to rejoin again and again is not given more time each
// heartbeat, one that joined is given the whole timeout to sync.
//
// REQUIRES: m.g.mu held.
func (c *Coordinator) awaitClassicLocked(m *member, restart bool) {
	if m.classicDue != 0 && !restart {
		return
	}
	d := max(m.rebalanceTimeout, minTimeout)
	m.classicDue = c.clk.Now() + d
	_, _ = c.tm.Reschedule(&m.classicWait, d) // fails only once closed
}

// stopClassicWaitLocked ends m's join or sync wait: it synced.
//
// REQUIRES: m.g.mu held.
func (c *Coordinator) stopClassicWaitLocked(m *member) {
	if m.classicDue != 0 {
		c.tm.Cancel(&m.classicWait)
		m.classicDue = 0
	}
}
