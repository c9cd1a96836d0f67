package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareJoin is a ShareGroupHeartbeat joining group as member, subscribed
// to "orders".
func shareJoin(group, member string) *kmsg.ShareGroupHeartbeatRequest {
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{"orders"}
	return hb
}

// awaitCoordinator waits until s coordinates each of ids: their offsets
// partitions are loaded.
func awaitCoordinator(t *testing.T, s *Server, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.Eventually(t, func() bool { return s.offsets.KeyError(id) == nil }, 5*time.Second, time.Millisecond,
			"%s's offsets partition loads", id)
	}
}

// TestShareGroupIDRefusesOtherTypes checks Kafka's answers to the classic
// and consumer group requests that name a share group, and that none of
// them makes a group of another type under its id.
func TestShareGroupIDRefusesOtherTypes(t *testing.T) {
	s := newGroupServer(t)
	awaitCoordinator(t, s, "sg")
	tc := newTestConn(t, s)
	hb := tc.await(tc.serve(s, shareJoin("sg", "sm"))).(*kmsg.ShareGroupHeartbeatResponse)
	require.Zero(t, hb.ErrorCode)

	join := tc.await(tc.serve(s, joinGroupReq(4, "sg", ""))).(*kmsg.JoinGroupResponse)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, join.ErrorCode, "classic join of a share group")
	assert.Empty(t, join.MemberID, "no member id is handed out")

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "sg", "sm", 1
	assert.Equal(t, kerr.UnknownMemberID.Code, tc.await(tc.serve(s, sync)).(*kmsg.SyncGroupResponse).ErrorCode, "SyncGroup")
	beat := kmsg.NewPtrHeartbeatRequest()
	beat.Group, beat.MemberID, beat.Generation = "sg", "sm", 1
	assert.Equal(t, kerr.UnknownMemberID.Code, tc.await(tc.serve(s, beat)).(*kmsg.HeartbeatResponse).ErrorCode, "Heartbeat")

	for _, gen := range []int32{-1, 1} {
		commit := tc.await(tc.serve(s, commitReq(9, "sg", "", gen, 10))).(*kmsg.OffsetCommitResponse)
		for _, p := range commit.Topics[0].Partitions {
			assert.Equal(t, kerr.GroupIDNotFound.Code, p.ErrorCode, "OffsetCommit at generation %d", gen)
		}
	}

	// OffsetFetch and OffsetDelete: GROUP_ID_NOT_FOUND (Kafka's
	// ShareGroup.validateOffsetFetch and validateOffsetDelete), the
	// group's error alone, each partition named before v2.
	for _, v := range []int16{1, 7, 8} {
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.SetVersion(v)
		ft := kmsg.OffsetFetchRequestTopic{Topic: "orders", Partitions: []int32{0}}
		if v >= 8 {
			fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "sg", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}}}}
		} else {
			fetch.Group, fetch.Topics = "sg", []kmsg.OffsetFetchRequestTopic{ft}
		}
		got := tc.await(tc.serve(s, fetch)).(*kmsg.OffsetFetchResponse)
		switch {
		case v >= 8:
			require.Len(t, got.Groups, 1)
			assert.Equal(t, kerr.GroupIDNotFound.Code, got.Groups[0].ErrorCode, "OffsetFetch v%d", v)
			assert.Empty(t, got.Groups[0].Topics)
		case v >= 2:
			assert.Equal(t, kerr.GroupIDNotFound.Code, got.ErrorCode, "OffsetFetch v%d", v)
			assert.Empty(t, got.Topics)
		default:
			require.Len(t, got.Topics, 1)
			require.Len(t, got.Topics[0].Partitions, 1)
			assert.Equal(t, kerr.GroupIDNotFound.Code, got.Topics[0].Partitions[0].ErrorCode, "OffsetFetch v%d", v)
			assert.Equal(t, int64(-1), got.Topics[0].Partitions[0].Offset)
		}
	}
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group, del.Topics = "sg", []kmsg.OffsetDeleteRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	deleted := tc.await(tc.serve(s, del)).(*kmsg.OffsetDeleteResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, deleted.ErrorCode, "OffsetDelete")
	assert.Empty(t, deleted.Topics)

	cg := tc.await(tc.serve(s, cgHeartbeat(1, "sg", "cm", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, cg.ErrorCode, "ConsumerGroupHeartbeat")
	require.NotNil(t, cg.ErrorMessage)
	assert.Equal(t, "Group sg is not a consumer group.", *cg.ErrorMessage)

	assert.False(t, s.consumers.Has("sg"), "no consumer group was made")
	_, found, _ := s.groups.DescribeGroup("sg")
	assert.False(t, found, "no classic group was made")
	list := tc.await(tc.serve(s, kmsg.NewPtrListGroupsRequest())).(*kmsg.ListGroupsResponse)
	require.Len(t, list.Groups, 1)
	assert.Equal(t, "share", list.Groups[0].GroupType, "the id lists once, as the share group")
}

// TestConsumerGroupIDRefusesShareMembers checks the other way: a
// ShareGroupHeartbeat naming a KIP-848 consumer group is
// GROUP_ID_NOT_FOUND with Kafka's message, and makes no share group.
func TestConsumerGroupIDRefusesShareMembers(t *testing.T) {
	s := newGroupServer(t)
	awaitCoordinator(t, s, "cg")
	tc := newTestConn(t, s)
	require.Zero(t, tc.await(tc.serve(s, cgHeartbeat(1, "cg", "cm", 0, nil))).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	hb := tc.await(tc.serve(s, shareJoin("cg", "sm"))).(*kmsg.ShareGroupHeartbeatResponse)
	assert.Equal(t, kerr.GroupIDNotFound.Code, hb.ErrorCode)
	require.NotNil(t, hb.ErrorMessage)
	assert.Equal(t, "Group cg is not a share group.", *hb.ErrorMessage)
	assert.False(t, s.share.groups.Exists("cg"))
}

// TestGroupTypesRace races, for each of many new ids, a classic join, a
// consumer member's join and a share member's join: each id ends up one
// group type's, whichever request came first. A consumer group's id may
// also have an Empty classic group, which keeps its offsets (package
// consumergroup), never a classic group with members.
func TestGroupTypesRace(t *testing.T) {
	s := newGroupServer(t)
	const n = 40
	for i := range n { // every id's offsets partition loaded: the race is the groups'
		awaitCoordinator(t, s, fmt.Sprintf("race-%d", i))
	}
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("race-%d", i)
		reqs := []kmsg.Request{joinGroupReq(4, id, ""), cgHeartbeat(1, id, "cm", 0, nil), shareJoin(id, "sm")}
		for _, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tc := newTestConn(t, s)
				tc.await(tc.serve(s, req))
			}()
		}
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("race-%d", i)
		d, classic, _ := s.groups.DescribeGroup(id)
		consumer, shared := s.consumers.Has(id), s.share.groups.Exists(id)
		if consumer && classic {
			assert.Empty(t, d.Members, "%s: the consumer group's classic group only keeps offsets", id)
			classic = false
		}
		types := 0
		for _, has := range []bool{classic, consumer, shared} {
			if has {
				types++
			}
		}
		assert.Equal(t, 1, types, "%s is one group type's (classic %v, consumer %v, share %v)", id, classic, consumer, shared)
	}
}
