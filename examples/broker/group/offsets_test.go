package group

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func commit(t *testing.T, c *Coordinator, group, member string, gen int32, offs ...int64) []*kerr.Error {
	req := CommitRequest{Group: group, MemberID: member, Generation: gen, Retention: -1}
	for p, o := range offs {
		req.Offsets = append(req.Offsets, CommitOffset{Topic: "t", Partition: int32(p), Offset: o, LeaderEpoch: 7, Metadata: "m"})
	}
	return commitNow(t, c, req)
}

func fetch(t *testing.T, c *Coordinator, group string, partitions int) []int64 {
	t.Helper()
	var tps []TopicPartition
	for p := range partitions {
		tps = append(tps, TopicPartition{"t", int32(p)})
	}
	got, err := c.FetchOffsets(group, tps, false)
	require.Nil(t, err)
	out := make([]int64, len(got))
	for i, o := range got {
		out[i] = o.Offset
	}
	return out
}

func TestOffsetCommitAndFetch(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)
	r := res[0]

	assert.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", r.MemberID, r.Generation, 10, 20))
	assert.Equal(t, []int64{10, 20, -1}, fetch(t, c, "g", 3), "-1 where nothing was committed")
	got, err := c.FetchOffsets("g", []TopicPartition{{"t", 0}}, false)
	require.Nil(t, err)
	assert.Equal(t, PartitionOffset{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: 7, Metadata: "m"}, got[0])
	all, err := c.FetchAllOffsets("g", false)
	require.Nil(t, err)
	assert.Len(t, all, 2)
	assert.Equal(t, []int64{-1}, fetch(t, c, "nope", 1), "a group that does not exist has none")

	tests := []struct {
		name   string
		member string
		gen    int32
		want   *kerr.Error
	}{
		{"old generation", r.MemberID, 0, kerr.IllegalGeneration},
		{"unknown member", "who", 1, kerr.UnknownMemberID},
		{"simple consumer into a group with members", "", -1, kerr.UnknownMemberID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, []*kerr.Error{tt.want}, commit(t, c, "g", tt.member, tt.gen, 99))
		})
	}
	assert.Equal(t, []int64{10}, fetch(t, c, "g", 1), "refused commits change nothing")

	join(c, joinReq("g", r.MemberID)) // PreparingRebalance: commits are still taken
	assert.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", r.MemberID, r.Generation, 11))
	join(c, joinReq("g", res[1].MemberID)) // CompletingRebalance: not until the assignment
	assert.Equal(t, []*kerr.Error{kerr.RebalanceInProgress}, commit(t, c, "g", r.MemberID, 2, 12))
	assert.Equal(t, []int64{11}, fetch(t, c, "g", 1))
}

func TestSimpleConsumerCommits(t *testing.T) {
	c, _ := newTestCoordinator(t)
	assert.Equal(t, []*kerr.Error{kerr.IllegalGeneration}, commit(t, c, "g", "someone", 3, 5),
		"a generation of a group that does not exist")
	assert.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 5), "generation -1: the group only stores offsets")
	assert.Equal(t, []int64{5}, fetch(t, c, "g", 1))
	st, members := state(t, c, "g")
	assert.Equal(t, Empty, st)
	assert.Empty(t, members)

	big := CommitRequest{Group: "g", Generation: -1, Retention: -1, Offsets: []CommitOffset{
		{Topic: "t", Partition: 0, Offset: 6, Metadata: strings.Repeat("x", DefaultMaxMetadataSize+1)},
		{Topic: "t", Partition: 1, Offset: 7},
	}}
	assert.Equal(t, []*kerr.Error{kerr.OffsetMetadataTooLarge, nil}, commitNow(t, c, big))
	assert.Equal(t, []int64{5, 7}, fetch(t, c, "g", 2))
}

func TestOffsetsOfAnEmptyGroupExpire(t *testing.T) {
	const retention = time.Hour
	c, clk := newTestCoordinator(t, WithOffsetsRetention(retention))
	res := stableGroup(t, c, clk, "g", 1)
	r := res[0]
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", r.MemberID, r.Generation, 42))
	for range 2 * retention / (testSession - time.Second) {
		clk.Advance(testSession - time.Second)
		require.Nil(t, heartbeat(c, "g", r))
	}
	assert.Equal(t, []int64{42}, fetch(t, c, "g", 1), "a group with members keeps its offsets")

	_, errs := c.LeaveGroup("g", []MemberIdentity{{MemberID: r.MemberID}})
	require.Equal(t, []*kerr.Error{nil}, errs)
	st, _ := state(t, c, "g")
	require.Equal(t, Empty, st, "the rebalance ended at once: nobody to wait for")

	clk.Advance(retention - time.Millisecond)
	assert.Equal(t, []int64{42}, fetch(t, c, "g", 1))
	clk.Advance(time.Millisecond)
	assert.Equal(t, []int64{-1}, fetch(t, c, "g", 1), "expired retention after the group became Empty")
	_, found, _ := c.DescribeGroup("g")
	assert.False(t, found, "and the group with them")
}

func TestSimpleConsumerOffsetsExpireFromTheirCommit(t *testing.T) {
	const retention = time.Hour
	c, clk := newTestCoordinator(t, WithOffsetsRetention(retention))
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "g", "", -1, 1))
	clk.Advance(retention / 2)
	require.Equal(t, []*kerr.Error{nil, nil}, commit(t, c, "g", "", -1, 2, 3)) // partition 0 again, and 1
	clk.Advance(retention / 2)
	assert.Equal(t, []int64{2, 3}, fetch(t, c, "g", 2), "each offset counts from its own commit")
	clk.Advance(retention/2 - time.Millisecond)
	assert.Equal(t, []int64{2, 3}, fetch(t, c, "g", 2))
	clk.Advance(time.Millisecond)
	assert.Equal(t, []int64{-1, -1}, fetch(t, c, "g", 2))
}

func TestExplicitRetentionOfOldCommits(t *testing.T) {
	c, clk := newTestCoordinator(t)
	req := CommitRequest{Group: "g", Generation: -1, Retention: time.Minute, Offsets: []CommitOffset{{Topic: "t", Offset: 1}}}
	require.Equal(t, []*kerr.Error{nil}, commitNow(t, c, req))
	clk.Advance(time.Minute - time.Millisecond)
	assert.Equal(t, []int64{1}, fetch(t, c, "g", 1))
	clk.Advance(time.Millisecond)
	assert.Equal(t, []int64{-1}, fetch(t, c, "g", 1), "v2-v4's retention time")
}

func TestEmptyGroupWithoutOffsetsIsDeleted(t *testing.T) {
	c, clk := newTestCoordinator(t, WithEmptyGroupRetention(time.Minute))
	req := joinReq("g", "")
	req.RequireKnownMemberID = true
	require.Equal(t, kerr.MemberIDRequired, join(c, req).one(t).Err) // creates the group
	clk.Advance(time.Minute - time.Millisecond)
	_, found, _ := c.DescribeGroup("g")
	require.True(t, found)
	clk.Advance(time.Millisecond)
	_, found, _ = c.DescribeGroup("g")
	assert.False(t, found)
	assert.Zero(t, c.sessions.Delayed(), "the pending member's session ended with it")
}

func TestDeleteOffsets(t *testing.T) {
	decode := func(metadata []byte) ([]string, error) { return []string{"t"}, nil }
	c, clk := newTestCoordinator(t, WithSubscriptions(decode))
	res := stableGroup(t, c, clk, "g", 1)
	r := res[0]
	req := CommitRequest{Group: "g", MemberID: r.MemberID, Generation: 1, Retention: -1,
		Offsets: []CommitOffset{{Topic: "t", Offset: 1}, {Topic: "u", Offset: 2}}}
	require.Equal(t, []*kerr.Error{nil, nil}, commitNow(t, c, req))

	gerr, errs := c.DeleteOffsets("g", []TopicPartition{{"t", 0}, {"u", 0}})
	require.Nil(t, gerr)
	assert.Equal(t, []*kerr.Error{kerr.GroupSubscribedToTopic, nil}, errs, "t is consumed, u is not")
	got, _ := c.FetchOffsets("g", []TopicPartition{{"t", 0}, {"u", 0}}, false)
	assert.Equal(t, int64(1), got[0].Offset)
	assert.Equal(t, int64(-1), got[1].Offset)

	gerr, _ = c.DeleteOffsets("nope", nil)
	assert.Equal(t, kerr.GroupIDNotFound, gerr)
}

func TestDeleteGroups(t *testing.T) {
	c, clk := newTestCoordinator(t)
	stableGroup(t, c, clk, "busy", 1)
	require.Equal(t, []*kerr.Error{nil}, commit(t, c, "offsets-only", "", -1, 1))
	req := joinReq("pending", "")
	req.RequireKnownMemberID = true
	require.Equal(t, kerr.MemberIDRequired, join(c, req).one(t).Err)
	waiting := c.sessions.Delayed()

	errs := c.DeleteGroups([]string{"busy", "offsets-only", "pending", "nope"})
	assert.Equal(t, []*kerr.Error{kerr.NonEmptyGroup, nil, nil, kerr.GroupIDNotFound}, errs)
	assert.Equal(t, []int64{-1}, fetch(t, c, "offsets-only", 1), "its offsets went with it")
	assert.Equal(t, waiting-1, c.sessions.Delayed(), "the pending member's session was answered")
	assert.Zero(t, c.expiry.Delayed(), "nor does anything wait for their expiration (busy is not Empty)")
	groups, err := c.ListGroups()
	require.Nil(t, err)
	require.Len(t, groups, 1)
	assert.Equal(t, Listing{Group: "busy", ProtocolType: "consumer", State: Stable}, groups[0])
}
