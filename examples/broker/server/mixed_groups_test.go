package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicJoinReq is a JoinGroup v9 of a Java-style consumer subscribing
// to "orders" with the ConsumerProtocol, saying it owns owned.
func classicJoinReq(group, member string, owned ...int32) *kmsg.JoinGroupRequest {
	req := joinGroupReq(9, group, member)
	md := kmsg.NewConsumerMemberMetadata()
	md.Version, md.Topics = 3, []string{"orders"}
	if len(owned) > 0 {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = "orders", owned
		md.OwnedPartitions = append(md.OwnedPartitions, op)
	}
	req.Protocols[0].Name, req.Protocols[0].Metadata = "cooperative-sticky", md.AppendTo(nil)
	return req
}

// classicPartitions reads a SyncGroup's ConsumerProtocol assignment of
// "orders".
func classicPartitions(t *testing.T, b []byte) []int32 {
	t.Helper()
	var ca kmsg.ConsumerMemberAssignment
	require.NoError(t, ca.ReadFrom(b))
	var ps []int32
	for _, ct := range ca.Topics {
		if ct.Topic == "orders" {
			ps = append(ps, ct.Partitions...)
		}
	}
	return ps
}

// TestMixedGroupWire: a classic group of one ConsumerProtocol member is
// converted when a consumer-protocol member joins, under
// group.consumer.migration.policy bidirectional, and refused under
// disabled; the classic member is told to rejoin, rejoins and syncs in
// the consumer group, revoking before the newcomer gets its partitions;
// when the newcomer leaves, the group is classic again.
func TestMixedGroupWire(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  string
		upgrade bool
	}{
		{name: "bidirectional", policy: "bidirectional", upgrade: true},
		{name: "disabled", policy: "disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0; c.GroupConsumerMigrationPolicy = tc.policy })
			createTopic(t, s, "orders", 3)
			c := dialRaw(t, s)

			first := c.RoundTrip(classicJoinReq("mixed", "")).(*kmsg.JoinGroupResponse)
			require.Equal(t, kerr.MemberIDRequired.Code, first.ErrorCode)
			j := c.RoundTrip(classicJoinReq("mixed", first.MemberID)).(*kmsg.JoinGroupResponse)
			require.Equal(t, int16(0), j.ErrorCode)
			sync := syncGroupReq(5, "mixed", j)
			ca := kmsg.NewConsumerMemberAssignment()
			ct := kmsg.NewConsumerMemberAssignmentTopic()
			ct.Topic, ct.Partitions = "orders", []int32{0, 1, 2}
			ca.Topics = append(ca.Topics, ct)
			sync.GroupAssignment[0].MemberAssignment = ca.AppendTo(nil)
			require.Equal(t, int16(0), c.RoundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode)

			x := c.RoundTrip(cgHeartbeat(1, "mixed", "x", 0, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
			if !tc.upgrade {
				assert.Equal(t, kerr.GroupIDNotFound.Code, x.ErrorCode, "the policy refuses the upgrade")
				assert.Equal(t, int16(0), c.heartbeat(4, "mixed", j), "the classic group goes on")
				return
			}
			require.Equal(t, int16(0), x.ErrorCode)
			assert.Equal(t, j.Generation+1, x.MemberEpoch, "the group epoch moves past the generation")
			require.NotNil(t, x.Assignment)
			assert.Empty(t, x.Assignment.Topics, "nothing is free while the classic member holds it all")

			assert.Equal(t, kerr.RebalanceInProgress.Code, c.heartbeat(4, "mixed", j), "the classic member must rejoin")
			rj := c.RoundTrip(classicJoinReq("mixed", j.MemberID, 0, 1, 2)).(*kmsg.JoinGroupResponse)
			require.Equal(t, int16(0), rj.ErrorCode)
			assert.Equal(t, j.Generation, rj.Generation, "revoking first, at its epoch")
			assert.Empty(t, rj.LeaderID, "no member leads: the coordinator assigns")
			rs := c.RoundTrip(syncGroupReq(5, "mixed", rj)).(*kmsg.SyncGroupResponse)
			require.Equal(t, int16(0), rs.ErrorCode)
			kept := classicPartitions(t, rs.MemberAssignment)
			assert.Len(t, kept, 2, "uniform: two of three partitions stay")
			rj = c.RoundTrip(classicJoinReq("mixed", j.MemberID, kept...)).(*kmsg.JoinGroupResponse)
			require.Equal(t, int16(0), rj.ErrorCode)
			assert.Equal(t, x.MemberEpoch, rj.Generation, "revoked: the group's epoch")

			xb := c.RoundTrip(cgHeartbeat(1, "mixed", "x", x.MemberEpoch, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
			require.Equal(t, int16(0), xb.ErrorCode)
			require.NotNil(t, xb.Assignment)
			require.Len(t, xb.Assignment.Topics, 1)
			assert.Len(t, xb.Assignment.Topics[0].Partitions, 1, "the revoked partition")
			assert.NotContains(t, kept, xb.Assignment.Topics[0].Partitions[0])

			leave := c.RoundTrip(cgHeartbeat(1, "mixed", "x", -1, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
			require.Equal(t, int16(0), leave.ErrorCode)
			d := c.describe("mixed")
			assert.Equal(t, int16(0), d.ErrorCode, "a classic group again")
			assert.Equal(t, "PreparingRebalance", d.State)
			require.Len(t, d.Members, 1)
			assert.Equal(t, j.MemberID, d.Members[0].MemberID)
			cd := kmsg.NewPtrConsumerGroupDescribeRequest()
			cd.Groups = []string{"mixed"}
			assert.Equal(t, kerr.GroupIDNotFound.Code, c.RoundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode)
		})
	}
}

// TestStaticClassicMemberReplacesLastConsumerMember: a static classic
// member joining with the instance id of a consumer group's only member
// (a consumer-protocol one) takes its place, and the group, now of
// classic members alone, is a classic group again.
func TestStaticClassicMemberReplacesLastConsumerMember(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.GroupInitialRebalance = 0 })
	createTopic(t, s, "orders", 3)
	c := dialRaw(t, s)
	hb := cgHeartbeat(1, "st", "x", 0, nil)
	hb.InstanceID = kmsg.StringPtr("i1")
	require.Equal(t, int16(0), c.RoundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

	jreq := classicJoinReq("st", "")
	jreq.InstanceID = kmsg.StringPtr("i1")
	j := c.RoundTrip(jreq).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), j.ErrorCode, "%v", kerr.ErrorForCode(j.ErrorCode))
	assert.NotEqual(t, "x", j.MemberID, "a new member id for the instance")
	d := c.describe("st")
	require.Equal(t, int16(0), d.ErrorCode, "a classic group again")
	require.Len(t, d.Members, 1)
	assert.Equal(t, j.MemberID, d.Members[0].MemberID)
	assert.Equal(t, "i1", *d.Members[0].InstanceID)
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"st"}
	assert.Equal(t, kerr.GroupIDNotFound.Code, c.RoundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode)
}
