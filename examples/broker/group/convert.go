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
