package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func createPartitionsRequest(v int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(v)
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 5000
	req.Topics = topics
	return req
}

func growTo(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = name, count
	for _, replicas := range assignment {
		rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
	}
	return rt
}

// partitionCounts returns topic's partitions in the image and in the
// store.
func partitionCounts(t *testing.T, s *Server, topic string) (image, store int) {
	t.Helper()
	mt, err := s.image().Topic(topic)
	require.NoError(t, err)
	st, err := s.data.store.Topic(topic)
	require.NoError(t, err)
	return len(mt.Partitions), len(st.Partitions)
}

func TestCreatePartitionsEveryVersion(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, v := range versions(0, 3) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := fmt.Sprintf("grow-v%d", v)
			createTopic(t, s, name, 1)
			resp := c.RoundTrip(createPartitionsRequest(v, false, growTo(name, 3))).(*kmsg.CreatePartitionsResponse)
			require.Len(t, resp.Topics, 1)
			assert.Equal(t, name, resp.Topics[0].Topic)
			assert.Zero(t, resp.Topics[0].ErrorCode)
			im, st := partitionCounts(t, s, name)
			assert.Equal(t, 3, im, "the image has the new partitions once answered")
			assert.Equal(t, 3, st, "and so has the store")
			p, err := s.data.store.Partition(name, 2)
			require.NoError(t, err)
			require.NoError(t, s.replicas.Leads(p), "this broker leads the new partition")
		})
	}
}

func TestCreatePartitionsErrors(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	createTopic(t, s, "a", 2)
	createTopic(t, s, "__consumer_offsets", 1)
	c := dialRaw(t, s)
	tests := []struct {
		name    string
		topic   kmsg.CreatePartitionsRequestTopic
		want    *kerr.Error
		message string
	}{
		{"as many", growTo("a", 2), kerr.InvalidPartitions, "Topic already has 2 partition(s)."},
		{"fewer", growTo("a", 1), kerr.InvalidPartitions, "The topic a currently has 2 partition(s); 1 would not be an increase."},
		{"unknown", growTo("nope", 3), kerr.UnknownTopicOrPartition, ""},
		{"above MaxPartitions", growTo("a", storage.MaxPartitions+1), kerr.InvalidPartitions, "at most 65536"},
		{"too few assignments", growTo("a", 4, []int32{3}), kerr.InvalidReplicaAssignment, "Attempted to add 2 additional partition(s)"},
		{"assignment elsewhere", growTo("a", 3, []int32{4}), kerr.InvalidReplicaAssignment, "places it on [3]"},
		{"assignment of two replicas", growTo("a", 3, []int32{3, 3}), kerr.InvalidReplicaAssignment, "1 replica(s)"},
		{"internal topic", growTo("__consumer_offsets", 2), kerr.InvalidRequest, "__consumer_offsets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.RoundTrip(createPartitionsRequest(3, false, tc.topic)).(*kmsg.CreatePartitionsResponse)
			require.Len(t, resp.Topics, 1)
			st := resp.Topics[0]
			assert.Equal(t, tc.topic.Topic, st.Topic)
			assert.Equal(t, tc.want.Code, st.ErrorCode, "got %v", kerr.ErrorForCode(st.ErrorCode))
			if tc.message != "" {
				require.NotNil(t, st.ErrorMessage)
				assert.Contains(t, *st.ErrorMessage, tc.message)
			}
		})
	}
	im, st := partitionCounts(t, s, "a")
	assert.Equal(t, 2, im, "nothing grew")
	assert.Equal(t, 2, st)

	resp := c.RoundTrip(createPartitionsRequest(3, false, growTo("a", 3, []int32{3}))).(*kmsg.CreatePartitionsResponse)
	assert.Zero(t, resp.Topics[0].ErrorCode, "the placement itself is a valid assignment")
}

// TestCreatePartitionsDuplicatesAndValidateOnly: a topic listed twice is
// INVALID_REQUEST, answered once, and does not stop the others; with
// validate_only nothing grows.
func TestCreatePartitionsDuplicatesAndValidateOnly(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "a", 1)
	createTopic(t, s, "b", 1)
	c := dialRaw(t, s)

	resp := c.RoundTrip(createPartitionsRequest(3, true, growTo("a", 4), growTo("b", 1))).(*kmsg.CreatePartitionsResponse)
	require.Len(t, resp.Topics, 2)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Equal(t, kerr.InvalidPartitions.Code, resp.Topics[1].ErrorCode, "validate_only checks as the real thing")
	im, st := partitionCounts(t, s, "a")
	assert.Equal(t, 1, im, "validate_only grows nothing")
	assert.Equal(t, 1, st)

	resp = c.RoundTrip(createPartitionsRequest(3, false, growTo("a", 2), growTo("b", 2), growTo("a", 3))).(*kmsg.CreatePartitionsResponse)
	codes := map[string]int16{}
	for _, st := range resp.Topics {
		codes[st.Topic] = st.ErrorCode
	}
	assert.Len(t, resp.Topics, 2, "a duplicate is answered once, as Kafka does")
	assert.Equal(t, map[string]int16{"a": kerr.InvalidRequest.Code, "b": 0}, codes)
	im, _ = partitionCounts(t, s, "a")
	assert.Equal(t, 1, im)
	im, st = partitionCounts(t, s, "b")
	assert.Equal(t, 2, im)
	assert.Equal(t, 2, st)
}

// TestCreatePartitionsMaxBrokerPartitions: growing past
// max.broker.partitions is POLICY_VIOLATION with a message, all the
// topics of one request counted together.
func TestCreatePartitionsMaxBrokerPartitions(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxBrokerPartitions, c.OffsetsTopicPartitions = 10, 1 })
	createTopic(t, s, "a", 2)
	createTopic(t, s, "b", 2)
	c := dialRaw(t, s)
	resp := c.RoundTrip(createPartitionsRequest(3, false, growTo("a", 5), growTo("b", 5))).(*kmsg.CreatePartitionsResponse)
	require.Len(t, resp.Topics, 2)
	assert.Zero(t, resp.Topics[0].ErrorCode, "4 + 3 <= 10 - 1")
	assert.Equal(t, kerr.PolicyViolation.Code, resp.Topics[1].ErrorCode, "7 + 3 > 10 - 1")
	require.NotNil(t, resp.Topics[1].ErrorMessage)
	assert.Contains(t, *resp.Topics[1].ErrorMessage, "max.broker.partitions")
	im, st := partitionCounts(t, s, "b")
	assert.Equal(t, 2, im)
	assert.Equal(t, 2, st)
	assert.Equal(t, kerr.PolicyViolation.Code, c.RoundTrip(createTopicsRequest(7, newTopic("c", 3, 1))).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode,
		"the grown topic counts against the limit")
}

// TestCreatePartitionsAuthorization: ALTER on the topic, else
// TOPIC_AUTHORIZATION_FAILED whether it exists or not.
func TestCreatePartitionsAuthorization(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "mine", 1)
	createTopic(t, s, "theirs", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "mine", anonymous, kmsg.ACLOperationAlter))
	c := dialRaw(t, s)
	resp := c.RoundTrip(createPartitionsRequest(3, false, growTo("mine", 2), growTo("theirs", 2), growTo("nowhere", 2))).(*kmsg.CreatePartitionsResponse)
	codes := map[string]int16{}
	for _, st := range resp.Topics {
		codes[st.Topic] = st.ErrorCode
	}
	assert.Equal(t, map[string]int16{"mine": 0, "theirs": kerr.TopicAuthorizationFailed.Code,
		"nowhere": kerr.TopicAuthorizationFailed.Code}, codes)
	im, _ := partitionCounts(t, s, "mine")
	assert.Equal(t, 2, im)
	im, _ = partitionCounts(t, s, "theirs")
	assert.Equal(t, 1, im)
}
