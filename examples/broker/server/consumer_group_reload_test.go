package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConsumerGroup is the ConsumerGroupDescribe of group.
func describeConsumerGroup(t *testing.T, c *rawConn, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{group}
	resp := c.RoundTrip(d).(*kmsg.ConsumerGroupDescribeResponse)
	require.Len(t, resp.Groups, 1)
	require.Equal(t, int16(0), resp.Groups[0].ErrorCode)
	return resp.Groups[0]
}

// TestConsumerGroupSurvivesAReload: a KIP-848 group's records in its
// offsets partition bring it back on a load, as on a new coordinator,
// at the same group epoch with its members' epochs and partitions: its
// members go on heartbeating at their epochs, without a rebalance; and
// the rewrite of a compaction keeps the group's latest records.
func TestConsumerGroupSurvivesAReload(t *testing.T) {
	s, c, p := newOffsetsServer(t, compactAfter20)
	hb := func(member string, epoch int32, owns []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		r := c.RoundTrip(cgHeartbeat(1, "cg", member, epoch, owns)).(*kmsg.ConsumerGroupHeartbeatResponse)
		require.Equal(t, int16(0), r.ErrorCode, "%s at %d", member, epoch)
		return r
	}
	m1 := hb("m1", 0, nil)
	m1 = hb("m1", m1.MemberEpoch, owned(m1.Assignment))
	m2 := hb("m2", 0, nil)
	// m1 gives up what m2 is to have, and m2 takes it: both Stable.
	r1 := hb("m1", m1.MemberEpoch, owned(m1.Assignment))
	if r1.Assignment != nil {
		m1.Assignment = r1.Assignment
	}
	r1 = hb("m1", r1.MemberEpoch, owned(m1.Assignment))
	m2 = hb("m2", m2.MemberEpoch, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if m2.Assignment == nil {
		m2 = hb("m2", m2.MemberEpoch, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	}
	before := describeConsumerGroup(t, c, "cg")
	require.Equal(t, "Stable", before.State)
	require.Len(t, before.Members, 2)

	check := func(why string) {
		t.Helper()
		after := describeConsumerGroup(t, c, "cg")
		assert.Equal(t, before.Epoch, after.Epoch, "%s: the same group epoch", why)
		assert.Equal(t, before.Members, after.Members, "%s: the same members, epochs and partitions", why)
		for _, m := range before.Members {
			var owns []kmsg.ConsumerGroupHeartbeatRequestTopic
			for _, tp := range m.Assignment.TopicPartitions {
				owns = append(owns, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
			}
			r := hb(m.MemberID, m.MemberEpoch, owns)
			assert.Equal(t, m.MemberEpoch, r.MemberEpoch, "%s: %s goes on at its epoch", why, m.MemberID)
		}
		assert.Equal(t, "Stable", describeConsumerGroup(t, c, "cg").State, why)
	}
	reloadOffsets(t, s, func() {
		assert.False(t, s.consumers.Has("cg"), "forgotten while unloaded")
	})
	check("reloaded")

	// Commits until a rewrite moves the log start past the group's
	// records: the rewrite holds their latest.
	for i := int64(0); i < 200; i++ {
		o, err := p.Offsets()
		require.NoError(t, err)
		if o.LogStart > 0 {
			break
		}
		require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, i))))
	}
	o, err := p.Offsets()
	require.NoError(t, err)
	require.Greater(t, o.LogStart, int64(0), "a rewrite moved the log start")
	reloadOffsets(t, s, nil)
	check("reloaded after a rewrite")
}
