package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// reassignRequest asks partition 0 of topic to move to replicas (nil:
// cancel).
func reassignRequest(v int16, topic string, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(v)
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestReassignOneBroker: on a broker alone every reassignment's target is
// that broker: it completes at once, nothing is listed after it, a cancel
// is NO_REASSIGNMENT_IN_PROGRESS, and v1's allow_replication_factor_change
// false refuses a change of replication factor.
func TestReassignOneBroker(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "a", 1)
	c := dialRaw(t, s)
	for v := int16(0); v <= 1; v++ {
		resp := c.RoundTrip(reassignRequest(v, "a", []int32{1})).(*kmsg.AlterPartitionAssignmentsResponse)
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "v%d", v)
	}
	list := c.RoundTrip(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	assert.Equal(t, int16(0), list.ErrorCode)
	assert.Empty(t, list.Topics)

	resp := c.RoundTrip(reassignRequest(1, "a", nil)).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, kerr.NoReassignmentInProgress.Code, resp.Topics[0].Partitions[0].ErrorCode)
	resp = c.RoundTrip(reassignRequest(1, "nosuch", []int32{1})).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	resp = c.RoundTrip(reassignRequest(1, "a", []int32{2})).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, resp.Topics[0].Partitions[0].ErrorCode, "no broker 2")

	req := reassignRequest(1, "a", []int32{1})
	req.AllowReplicationFactorChange = false
	resp = c.RoundTrip(req).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "the same replication factor")
}

// TestReassignAuthorization: ALTER on the cluster for
// AlterPartitionReassignments, DESCRIBE for ListPartitionReassignments,
// else CLUSTER_AUTHORIZATION_FAILED.
func TestReassignAuthorization(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "a", 1)
	c := dialRaw(t, s)
	resp := c.RoundTrip(reassignRequest(1, "a", []int32{1})).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.Topics[0].Partitions[0].ErrorCode)
	list := c.RoundTrip(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, list.ErrorCode)

	grant(t, s, allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, anonymous, kmsg.ACLOperationDescribe))
	list = c.RoundTrip(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	assert.Equal(t, int16(0), list.ErrorCode)
	resp = c.RoundTrip(reassignRequest(1, "a", []int32{1})).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.ErrorCode, "DESCRIBE does not imply ALTER")

	grant(t, s, allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, anonymous, kmsg.ACLOperationAlter))
	resp = c.RoundTrip(reassignRequest(1, "a", []int32{1})).(*kmsg.AlterPartitionAssignmentsResponse)
	assert.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
}
