package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNotCoordinatorEveryShape: NOT_COORDINATOR lands wherever each
// version of each group API carries its error (test/cluster_test.go sends
// the newest versions to a broker of a cluster).
func TestNotCoordinatorEveryShape(t *testing.T) {
	code := kerr.NotCoordinator.Code
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.Group = "g"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 3}}}
		resp := notCoordinator(req).(*kmsg.OffsetFetchResponse)
		require.Len(t, resp.Topics, 1, "v%d: each partition carries the error", v)
		for _, p := range resp.Topics[0].Partitions {
			assert.Equal(t, code, p.ErrorCode)
			assert.Equal(t, int64(-1), p.Offset)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(5)
	assert.Equal(t, code, notCoordinator(fetch).(*kmsg.OffsetFetchResponse).ErrorCode)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"a", "b"}
	groups := notCoordinator(del).(*kmsg.DeleteGroupsResponse).Groups
	require.Len(t, groups, 2)
	assert.Equal(t, "b", groups[1].Group)
	assert.Equal(t, code, groups[1].ErrorCode)

	assert.Equal(t, code, notCoordinator(kmsg.NewPtrSyncGroupRequest()).(*kmsg.SyncGroupResponse).ErrorCode)
	assert.Equal(t, code, notCoordinator(kmsg.NewPtrLeaveGroupRequest()).(*kmsg.LeaveGroupResponse).ErrorCode)
	assert.Equal(t, code, notCoordinator(kmsg.NewPtrOffsetDeleteRequest()).(*kmsg.OffsetDeleteResponse).ErrorCode)
}
