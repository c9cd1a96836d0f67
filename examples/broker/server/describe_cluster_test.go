package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeCluster(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.SetVersion(12)
	meta := c.RoundTrip(mreq).(*kmsg.MetadataResponse)
	for _, v := range versions(0, 2) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(v)
		req.EndpointType = endpointTypeBroker
		resp := c.RoundTrip(req).(*kmsg.DescribeClusterResponse)
		require.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
		assert.Equal(t, *meta.ClusterID, resp.ClusterID, "v%d: the cluster id Metadata gives", v)
		assert.Equal(t, meta.ControllerID, resp.ControllerID, "v%d", v)
		require.Len(t, resp.Brokers, 1, "v%d", v)
		assert.Equal(t, meta.Brokers[0].NodeID, resp.Brokers[0].NodeID)
		assert.Equal(t, meta.Brokers[0].Host, resp.Brokers[0].Host)
		assert.Equal(t, meta.Brokers[0].Port, resp.Brokers[0].Port)
		assert.False(t, resp.Brokers[0].IsFenced)
		assert.Equal(t, int32(operationsNotRequested), resp.ClusterAuthorizedOperations, "v%d: not asked for", v)
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(1)
	req.EndpointType = endpointTypeBroker
	req.IncludeClusterAuthorizedOperations = true
	resp := c.RoundTrip(req).(*kmsg.DescribeClusterResponse)
	assert.NotZero(t, resp.ClusterAuthorizedOperations&(1<<int(kmsg.ACLOperationDescribe)), "every operation without an authorizer")

	req = kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(1)
	req.EndpointType = 2 // a controller's
	resp = c.RoundTrip(req).(*kmsg.DescribeClusterResponse)
	assert.Equal(t, kerr.UnsupportedEndpointType.Code, resp.ErrorCode)
	assert.Empty(t, resp.Brokers)
}

func askTopicPartitions(c *rawConn, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.SetVersion(0)
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	return c.RoundTrip(req).(*kmsg.DescribeTopicPartitionsResponse)
}

// pageOf flattens an answer to topic/partition names, with the error
// codes of topics that have one.
func pageOf(resp *kmsg.DescribeTopicPartitionsResponse) []string {
	var out []string
	for _, dt := range resp.Topics {
		if dt.ErrorCode != 0 {
			out = append(out, *dt.Topic+":"+kerr.ErrorForCode(dt.ErrorCode).Error())
			continue
		}
		for _, p := range dt.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", *dt.Topic, p.Partition))
		}
	}
	return out
}

// TestDescribeTopicPartitionsPages: every topic in name order, a page of
// at most the limit, and a cursor that resumes where the page ended,
// inside a topic or at the next one.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	createTopic(t, s, "b", 3)
	createTopic(t, s, "a", 2)
	createTopic(t, s, "c", 1)

	resp := askTopicPartitions(c, 100, nil)
	assert.Equal(t, []string{"a/0", "a/1", "b/0", "b/1", "b/2", "c/0"}, pageOf(resp))
	assert.Nil(t, resp.NextCursor)
	a := resp.Topics[0]
	assert.NotEqual(t, [16]byte{}, a.TopicID)
	assert.False(t, a.IsInternal)
	assert.Equal(t, int32(1), a.Partitions[0].LeaderID)
	assert.Equal(t, []int32{1}, a.Partitions[0].ISR)
	assert.Empty(t, a.Partitions[0].OfflineReplicas)

	var pages [][]string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		resp := askTopicPartitions(c, 2, cursor)
		pages = append(pages, pageOf(resp))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	assert.Equal(t, [][]string{{"a/0", "a/1"}, {"b/0", "b/1"}, {"b/2", "c/0"}}, pages)

	resp = askTopicPartitions(c, 0, nil, "c", "b")
	assert.Equal(t, []string{"b/0"}, pageOf(resp), "a limit of 0 is 1")
	require.NotNil(t, resp.NextCursor)
	assert.Equal(t, "b", resp.NextCursor.Topic)
	assert.Equal(t, int32(1), resp.NextCursor.Partition)
}

// TestDescribeTopicPartitionsErrors: a named topic that does not exist,
// a cursor outside the topics named, a negative cursor partition.
func TestDescribeTopicPartitionsErrors(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	createTopic(t, s, "a", 1)

	resp := askTopicPartitions(c, 10, nil, "a", "missing")
	assert.Equal(t, []string{"a/0", "missing:" + kerr.UnknownTopicOrPartition.Error()}, pageOf(resp))
	assert.Equal(t, [16]byte{}, [16]byte(resp.Topics[1].TopicID))

	resp = askTopicPartitions(c, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "z"}, "a")
	assert.Equal(t, []string{"a:" + kerr.InvalidRequest.Error()}, pageOf(resp), "the cursor's topic must be named")
	resp = askTopicPartitions(c, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}, "a")
	assert.Equal(t, []string{"a:" + kerr.InvalidRequest.Error()}, pageOf(resp))
}

// TestDescribeTopicPartitionsAuthorized: a topic the client may not
// DESCRIBE is left out of an answer for every topic, and named, is
// TOPIC_AUTHORIZATION_FAILED whether it exists or not, after the others.
func TestDescribeTopicPartitionsAuthorized(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "orders", 1)
	createTopic(t, s, "secret", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationRead))
	c := dialRaw(t, s)

	resp := askTopicPartitions(c, 10, nil)
	assert.Equal(t, []string{"orders/0"}, pageOf(resp))
	assert.NotZero(t, resp.Topics[0].AuthorizedOperations&(1<<int(kmsg.ACLOperationRead)))
	assert.Zero(t, resp.Topics[0].AuthorizedOperations&(1<<int(kmsg.ACLOperationWrite)))

	resp = askTopicPartitions(c, 10, nil, "secret", "orders", "nowhere")
	denied := kerr.TopicAuthorizationFailed.Error()
	assert.Equal(t, []string{"orders/0", "nowhere:" + denied, "secret:" + denied}, pageOf(resp))
	assert.Equal(t, [16]byte{}, [16]byte(resp.Topics[2].TopicID), "no id for a topic it may not describe")
}
