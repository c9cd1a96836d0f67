package consumergroup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFullGroupRefusesNewMembers: a group at group.consumer.max.size
// answers the heartbeat of any member it does not have
// GROUP_MAX_SIZE_REACHED, whatever its epoch, as Kafka's
// throwIfConsumerGroupIsFull does; its members go on, and once one leaves
// another may join.
func TestFullGroupRefusesNewMembers(t *testing.T) {
	topics := newFakeTopics()
	topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics, WithMaxSize(2))
	a := join(t, c, "g", "a", "t")
	join(t, c, "g", "b", "t")

	for _, epoch := range []int32{JoinEpoch, 3} {
		_, err, msg := heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "c", MemberEpoch: epoch,
			RebalanceTimeout: 1000, SubscribedNames: []string{"t"}})
		assert.Equal(t, kerr.GroupMaxSizeReached, err, "epoch %d", epoch)
		assert.Equal(t, "The consumer group has reached its maximum capacity of 2 members.", msg)
	}
	_, err := keepAlive(t, c, "g", "a", a.MemberEpoch)
	assert.Nil(t, err, "a member heartbeats")
	join(t, c, "g", "a", "t") // a member joins again

	_, err, _ = heartbeat(c, HeartbeatRequest{Version: 1, Group: "g", MemberID: "b", MemberEpoch: LeaveEpoch})
	require.Nil(t, err)
	join(t, c, "g", "c", "t")
}

// TestFullGroupRefusesNewClassicMembers: a classic member's JoinGroup
// into a consumer group at group.consumer.max.size is
// GROUP_MAX_SIZE_REACHED, before MEMBER_ID_REQUIRED would hand it an id
// (Kafka's classicGroupJoinToConsumerGroup); a classic member rejoins.
func TestFullGroupRefusesNewClassicMembers(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics, WithMaxSize(2))
	convertTestGroup(t, c, tp) // classic members a and b

	for _, requireID := range []bool{false, true} {
		var jerr *kerr.Error
		c.ClassicJoin(ClassicJoinRequest{Group: "g", ProtocolType: ClassicProtocolType, Protocols: classicProtocols([]string{"t"}, nil),
			SessionTimeout: classicSession, RebalanceTimeout: testRebalance, RequireKnownMemberID: requireID},
			func(_ ClassicJoinResponse, e *kerr.Error) { jerr = e })
		assert.Equal(t, kerr.GroupMaxSizeReached, jerr, "requireKnownMemberID=%v", requireID)
	}
	_, err := classicJoin(c, "g", "a", map[string][]int32{"t": {0, 1}}, "t")
	assert.Nil(t, err, "a member rejoins")
}

func TestMaxSizeMustBePositive(t *testing.T) {
	_, err := New(WithTopics(newFakeTopics().snapshot), WithMaxSize(0))
	assert.Error(t, err, "group.consumer.max.size is at least 1")
}

// TestToClassicRefusesAGroupOverTheClassicMaxSize: a consumer group of
// classic members alone is not handed back to the classic protocol if it
// has more members than the classic group.max.size allows (Kafka's
// validateOnlineDowngrade...): it stays a consumer group.
func TestToClassicRefusesAGroupOverTheClassicMaxSize(t *testing.T) {
	topics := newFakeTopics()
	tp := topics.set("t", 4)
	c, _ := newTestCoordinator(t, topics)
	convertTestGroup(t, c, tp) // classic members a and b

	_, ok := c.ToClassic("g", 1)
	assert.False(t, ok, "two members, a classic limit of one")
	assert.True(t, c.HasMembers("g"), "it stays a consumer group")
	cg, ok := c.ToClassic("g", 2)
	require.True(t, ok, "within the limit")
	assert.Len(t, cg.Members, 2)
}
