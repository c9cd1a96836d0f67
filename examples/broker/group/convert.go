package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// A classic group whose members use the consumer protocol type becomes a
// KIP-848 consumer group when a member of the consumer protocol joins it
// (Kafka's convertToConsumerGroup, an online upgrade): its members are
// handed to the consumer coordinator, which drives them from then on,
// and leave this group, which stays Empty with the group's offsets (the
// consumer group's offsets are this coordinator's either way).

// ConvertedMember is a member of a classic group handed to the consumer
// coordinator by ConvertToConsumer.
type ConvertedMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
	SessionTimeout, RebalanceTimeout           time.Duration
	Protocols                                  []Protocol
	Assignment                                 []byte // its last SyncGroup's; nil if none yet
}

// Conversion is a classic group with members as ConvertToConsumer hands
// it over: its generation, its selected protocol ("" outside a
// generation) and its members in join order.
type Conversion struct {
	Group      string
	Generation int32
	Protocol   string
	Members    []ConvertedMember
}

// ConvertToConsumer hands group's members to adopt, the consumer
// coordinator's conversion (Kafka's convertToConsumerGroup), under the
// group's mutex, so that no member joins or leaves meanwhile. If adopt
// takes them (returns nil), they leave this group: their waiting
// JoinGroup and SyncGroup are answered REBALANCE_IN_PROGRESS, so that
// they join again, now in the consumer group, and the group goes Empty,
// keeping its offsets. It returns found=false if the group has no
// members, and INCONSISTENT_GROUP_PROTOCOL, without calling adopt, if its
// protocol type is not ptype (Kafka converts only groups of the consumer
// protocol type). O(members).
func (c *Coordinator) ConvertToConsumer(group, ptype string, adopt func(Conversion) *kerr.Error) (found bool, err *kerr.Error) {
	var a after
	defer a.run()
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		return false, err
	}
	defer g.unlock()
	if len(g.members) == 0 {
		return false, nil
	}
	if g.ptype != ptype {
		return true, kerr.InconsistentGroupProtocol
	}
	conv := Conversion{Group: g.id, Generation: g.gen, Protocol: g.proto}
	for _, m := range g.sortedMembersLocked() {
		protos := make([]Protocol, len(m.protocols))
		for i, p := range m.protocols {
			protos[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
		}
		conv.Members = append(conv.Members, ConvertedMember{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, SessionTimeout: m.session, RebalanceTimeout: m.rebalance, Protocols: protos,
			Assignment: slices.Clone(m.assignment)})
	}
	if err := adopt(conv); err != nil {
		return true, err
	}
	for _, m := range g.sortedMembersLocked() {
		g.answerJoinLocked(m, JoinResult{Err: errRebalance, MemberID: m.id, Generation: -1}, &a)
		g.answerSyncLocked(m, SyncResult{Err: errRebalance}, &a)
		c.removeMemberAndUpdateLocked(g, m, "converted to a consumer group", &a)
	}
	for id := range g.pending {
		delete(g.pending, id)
		a.checkSession(g, id)
	}
	c.log.Info("classic group handed to the consumer coordinator", zap.String("group", g.id),
		zap.Int32("generation", conv.Generation), zap.Int("members", len(conv.Members)))
	return true, nil
}

// FromConsumer makes cv's members, a KIP-848 consumer group's classic
// members left alone there, the members of the classic group of its id
// (Kafka's ClassicGroup.fromConsumerGroup, KIP-848's online downgrade),
// created if it does not exist (it holds the group's offsets, Empty):
// at cv's generation, each with its assignment, and the group starts a
// rebalance, so that their next heartbeats tell them to join again. The
// protocol is the one every member supports that most members prefer.
// It fails with INCONSISTENT_GROUP_PROTOCOL, changing nothing, if the
// classic group has members, or the members share no protocol.
// O(members).
func (c *Coordinator) FromConsumer(cv Conversion) *kerr.Error {
	var a after
	defer a.run()
	g, err := c.lockGroup(cv.Group, true, &a)
	if g == nil {
		return err
	}
	defer g.unlock()
	if len(g.members) > 0 || len(cv.Members) == 0 {
		return kerr.InconsistentGroupProtocol
	}
	for _, cm := range cv.Members {
		m := &member{id: cm.MemberID, instanceID: cm.InstanceID, clientID: cm.ClientID, clientHost: cm.ClientHost,
			protocols: slices.Clone(cm.Protocols), session: cm.SessionTimeout, rebalance: cm.RebalanceTimeout,
			assignment: slices.Clone(cm.Assignment)}
		g.addLocked(m, "consumer")
	}
	proto := g.selectProtocolLocked()
	if proto == "" {
		for _, m := range g.sortedMembersLocked() {
			g.removeLocked(m.id, &a)
		}
		g.ptype, g.leader = "", ""
		return kerr.InconsistentGroupProtocol
	}
	g.gen, g.proto = cv.Generation, proto
	for _, m := range g.sortedMembersLocked() {
		c.scheduleSessionLocked(g, m, m.session, &a)
	}
	// Kafka creates the group Stable, at the generation, then
	// rebalances it: the rebalance waits for every member to join again
	// (or its rebalance timeout), not the initial delay of an Empty
	// group's first rebalance, whose end would remove the members that
	// have not rejoined yet. Stable is entered directly, as the group is
	// created in it: no transition of the state machine leads there from
	// Empty.
	g.disarmExpiryLocked(&a)
	g.st, g.at = Stable, c.clk.Now()
	// Kafka writes the classic group's records with the conversion: a
	// coordinator that takes the partition over finds the members here,
	// not in the consumer group whose tombstones came just before.
	g.storeQuietlyLocked("converted back from a consumer group", &a)
	c.prepareRebalanceLocked(g, "converted back from a consumer group", &a)
	c.log.Info("consumer group handed back to the classic coordinator", zap.String("group", g.id),
		zap.Int32("generation", g.gen), zap.Int("members", len(g.members)))
	return nil
}
