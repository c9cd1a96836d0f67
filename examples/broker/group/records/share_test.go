package records

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
)

// shareGroup is a KIP-932 group: a member at the group's epoch, and one
// behind it whose target differs from what it was last given.
func shareGroup(name string, epoch int32) sharegroup.StoredGroup {
	return sharegroup.StoredGroup{
		Group: name, Epoch: epoch, TargetEpoch: epoch, TopicsHash: 0x0123456789abcdef,
		Members: []sharegroup.StoredMember{
			{MemberID: "m1", ClientID: "c1", ClientHost: "/127.0.0.1", Topics: []string{"a", "b"}, Epoch: epoch,
				Assigned: sharegroup.Assignment{topicA: {0, 2}, topicB: {0}}, Target: sharegroup.Assignment{topicA: {0, 2}, topicB: {0}}},
			{MemberID: "m2", RackID: "r1", ClientID: "c2", ClientHost: "/127.0.0.2", Topics: []string{"a"}, Epoch: epoch - 1,
				Assigned: sharegroup.Assignment{}, Target: sharegroup.Assignment{topicA: {1}}},
		},
	}
}

// TestShareGroupRecords: a share group written comes back from a replay
// as it was, beside a consumer group and a classic group's offsets in the
// same partition, and from the replay's rewrite too; a member's tombstone
// removes it, the group's removes the group with its members; the others
// are not touched.
func TestShareGroupRecords(t *testing.T) {
	sg := shareGroup("sg", 4)
	rec := shareMemberRecord("sg", &sg.Members[0])
	assert.Equal(t, int16(shareMemberKeyVersion), int16(rec.Key[0])<<8|int16(rec.Key[1]))
	v := kmsg.NewShareGroupDescribeResponse()
	v.Version = shareDescribeVersion
	require.NoError(t, v.ReadFrom(rec.Value), "a ShareGroupDescribeResponse kmsg reads")

	meta := sg
	meta.Members = nil
	cg := consumerGroup("cg", 7)
	raw := log(
		[]kmsg.Record{Offset("sg", off("a", 0, 10))},
		ShareGroup(sharegroup.Change{Group: "sg", Meta: &meta, Members: sg.Members}),
		ConsumerGroup(written(cg)),
	)
	var r Replay
	_, err := r.Apply(raw)
	require.NoError(t, err)
	assert.Equal(t, []sharegroup.StoredGroup{sg}, r.ShareGroups())
	assert.Equal(t, []consumergroup.StoredGroup{cg}, r.ConsumerGroups(), "the consumer group is there too")
	assert.Equal(t, int64(1+3+3), r.Live(), "an offset, the share group and its two members, the consumer group's three")

	var again Replay
	for _, b := range r.Rewrite(t0, 2, 1<<20) {
		_, err := again.Apply(placed(0, [][]byte{b}))
		require.NoError(t, err)
	}
	assert.Equal(t, r.ShareGroups(), again.ShareGroups(), "the rewrite gives the same share groups")
	assert.Equal(t, r.ConsumerGroups(), again.ConsumerGroups(), "and consumer groups")
	assert.Equal(t, r.Live(), again.Live())

	// The latest record of each key wins; a member's tombstone removes it.
	later := shareGroup("sg", 5)
	meta = later
	meta.Members = nil
	next := log(ShareGroup(sharegroup.Change{Group: "sg", Meta: &meta, Members: later.Members[:1], Removed: []string{"m2"}}))
	_, err = r.Apply(placed(r.next, [][]byte{next}))
	require.NoError(t, err)
	want := later
	want.Members = later.Members[:1]
	assert.Equal(t, []sharegroup.StoredGroup{want}, r.ShareGroups())
	assert.Equal(t, int64(1+2+3), r.Live())

	// The group's tombstone removes it, its members with it.
	gone := log(ShareGroup(sharegroup.Change{Group: "sg", Deleted: true}))
	_, err = r.Apply(placed(r.next, [][]byte{gone}))
	require.NoError(t, err)
	assert.Empty(t, r.ShareGroups())
	assert.Len(t, r.ConsumerGroups(), 1)
	assert.Equal(t, int64(1+3), r.Live(), "the offset and the consumer group alone")
}

// TestKafkaShareGroupRecordRefused: Kafka's own share group records (key
// version 11, ShareGroupMetadataKey) are not this broker's: a replay
// refuses them rather than read them as something else.
func TestKafkaShareGroupRecordRefused(t *testing.T) {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 11, "sg"
	var r Replay
	_, err := r.Apply(log([]kmsg.Record{{Key: k.AppendTo(nil), Value: []byte{0, 0}}}))
	assert.ErrorIs(t, err, ErrRecord)
}
