package records

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
)

var (
	topicA = consumergroup.TopicID{1}
	topicB = consumergroup.TopicID{2}
)

// consumerGroup is a KIP-848 group mid-rebalance: a dynamic member of
// the classic protocol that must revoke a partition, and a static member
// that left for now.
func consumerGroup(name string, epoch int32) consumergroup.StoredGroup {
	return consumergroup.StoredGroup{
		Group: name, Epoch: epoch, TargetEpoch: epoch, Assignor: "uniform", TopicsHash: 0xfedcba9876543210,
		Members: []consumergroup.StoredMember{
			{MemberID: "m1", ClientID: "c1", ClientHost: "/127.0.0.1", Names: []string{"a", "b"}, Assignor: "range",
				RebalanceTimeout: 30 * time.Second, Epoch: epoch - 1, PrevEpoch: epoch - 2,
				Assigned: consumergroup.Assignment{topicA: {0, 1}}, Revoking: consumergroup.Assignment{topicB: {3}},
				Target: consumergroup.Assignment{topicA: {0, 1}},
				Since:  map[consumergroup.TopicID]map[int32]int32{topicA: {0: 1, 1: epoch - 1}, topicB: {3: 1}},
				Classic: &consumergroup.ClassicMember{SessionTimeout: 45 * time.Second, Protocols: []consumergroup.ClassicProtocol{
					{Name: "cooperative-sticky", Metadata: []byte{0, 3, 1}}, {Name: "range", Metadata: []byte{0, 1}}}}},
			{MemberID: "s1", InstanceID: "i1", RackID: "r1", ClientID: "c2", ClientHost: "/127.0.0.2", Names: []string{},
				Regex: "b.*", RebalanceTimeout: time.Minute, Epoch: epoch, PrevEpoch: epoch - 1, Left: true,
				Assigned: consumergroup.Assignment{topicB: {0, 1, 2}}, Revoking: consumergroup.Assignment{},
				Target: consumergroup.Assignment{topicB: {0, 1, 2, 3}},
				Since:  map[consumergroup.TopicID]map[int32]int32{topicB: {0: 2, 1: 2, 2: epoch}}},
		},
	}
}

// written is the change that writes sg whole.
func written(sg consumergroup.StoredGroup) consumergroup.Change {
	meta := sg
	meta.Members = nil
	return consumergroup.Change{Group: sg.Group, Meta: &meta, Members: sg.Members}
}

// TestConsumerGroupRecords: a consumer group written comes back from a
// replay as it was, beside a classic group's offsets in the same
// partition, and from the replay's rewrite too; a member's tombstone
// removes it, the group's removes the group with its members; the
// classic group is not touched.
func TestConsumerGroupRecords(t *testing.T) {
	sg := consumerGroup("cg", 7)
	rec := consumerMemberRecord("cg", &sg.Members[0])
	assert.Equal(t, int16(consumerMemberKeyVersion), int16(rec.Key[0])<<8|int16(rec.Key[1]))
	var v kmsg.ConsumerGroupDescribeResponse
	require.NoError(t, v.ReadFrom(rec.Value), "a ConsumerGroupDescribeResponse kmsg reads")

	later := consumerGroup("cg", 8)
	raw := log(
		[]kmsg.Record{Offset("cg", off("a", 0, 10))},
		ConsumerGroup(written(sg)),
		[]kmsg.Record{Offset("other", off("a", 0, 1))},
	)
	var r Replay
	_, err := r.Apply(raw)
	require.NoError(t, err)
	assert.Equal(t, []consumergroup.StoredGroup{sg}, r.ConsumerGroups())
	require.Len(t, r.Groups(), 2, "the classic groups' offsets are there too")
	assert.Equal(t, int64(2+3), r.Live(), "two offsets, the group and two members")

	var again Replay
	for _, b := range r.Rewrite(t0, 2, 1<<20) {
		_, err := again.Apply(placed(0, [][]byte{b}))
		require.NoError(t, err)
	}
	assert.Equal(t, r.ConsumerGroups(), again.ConsumerGroups(), "the rewrite gives the same groups")
	assert.Len(t, again.Groups(), 2, "and the classic groups' offsets")

	// The latest record of each key wins; a member's tombstone removes it.
	meta := later
	meta.Members = nil
	next := log(ConsumerGroup(consumergroup.Change{Group: "cg", Meta: &meta, Members: later.Members[1:], Removed: []string{"m1"}}))
	_, err = r.Apply(placed(r.next, [][]byte{next}))
	require.NoError(t, err)
	want := later
	want.Members = later.Members[1:]
	assert.Equal(t, []consumergroup.StoredGroup{want}, r.ConsumerGroups())
	assert.Equal(t, int64(2+2), r.Live())

	// The group's tombstone removes it, its members with it.
	gone := log(ConsumerGroup(consumergroup.Change{Group: "cg", Deleted: true}))
	_, err = r.Apply(placed(r.next, [][]byte{gone}))
	require.NoError(t, err)
	assert.Empty(t, r.ConsumerGroups())
	assert.Equal(t, int64(2), r.Live(), "the classic offsets alone")
	assert.Len(t, r.Groups(), 2)
}

// TestKafkaConsumerGroupRecordRefused: Kafka's own consumer group
// records (key version 3, ConsumerGroupMetadataKey) are not this
// broker's: a replay refuses them rather than read them as something
// else.
func TestKafkaConsumerGroupRecordRefused(t *testing.T) {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 3, "cg"
	var r Replay
	_, err := r.Apply(log([]kmsg.Record{{Key: k.AppendTo(nil), Value: []byte{0, 0}}}))
	assert.ErrorIs(t, err, ErrRecord)
}
