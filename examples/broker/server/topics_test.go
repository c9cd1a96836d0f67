package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopicsRequest(v int16, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(v)
	req.Topics = topics
	return req
}

func newTopic(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	return rt
}

func TestCreateTopicsEveryVersion(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, v := range versions(0, 7) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := fmt.Sprintf("topic-v%d", v)
			resp := c.RoundTrip(createTopicsRequest(v, newTopic(name, 2, 1))).(*kmsg.CreateTopicsResponse)
			require.Len(t, resp.Topics, 1)
			st := resp.Topics[0]
			assert.Equal(t, name, st.Topic)
			assert.Equal(t, int16(0), st.ErrorCode)
			topic, err := s.data.store.Topic(name)
			require.NoError(t, err)
			assert.Len(t, topic.Partitions, 2)
			if v >= 5 {
				assert.Equal(t, int32(2), st.NumPartitions)
				assert.Equal(t, int16(1), st.ReplicationFactor)
				// max.message.bytes, min.insync.replicas, retention.bytes,
				// retention.ms, unclean.leader.election.enable, and
				// compaction's seven (cleanup.policy, ..., segment.ms),
				// and the two throttled-replica lists.
				assert.Len(t, st.Configs, 14)
			}
			if v >= 7 {
				assert.Equal(t, [16]byte(topic.ID), st.TopicID)
			}
		})
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	createTopic(t, s, "taken", 1)
	c := dialRaw(t, s)
	withAssignment := func(name string, partitions []int32, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := newTopic(name, -1, -1)
		for i, p := range partitions {
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas[i]})
		}
		return rt
	}
	withConfig := func(name, config, value string) kmsg.CreateTopicsRequestTopic {
		rt := newTopic(name, 1, 1)
		rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: config, Value: kmsg.StringPtr(value)}}
		return rt
	}
	tests := []struct {
		name  string
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
	}{
		{"exists", newTopic("taken", 1, 1), kerr.TopicAlreadyExists},
		{"replication factor above one broker", newTopic("rf3", 1, 3), kerr.InvalidReplicationFactor},
		{"replication factor zero", newTopic("rf0", 1, 0), kerr.InvalidReplicationFactor},
		{"no partitions", newTopic("p0", 0, 1), kerr.InvalidPartitions},
		{"invalid name", newTopic("a b", 1, 1), kerr.InvalidTopicException},
		{"assignment to another broker", withAssignment("elsewhere", []int32{0}, []int32{4}), kerr.InvalidReplicaAssignment},
		{"assignment to two replicas", withAssignment("two", []int32{0}, []int32{3, 3}), kerr.InvalidReplicaAssignment},
		{"assignment with a gap", withAssignment("gap", []int32{0, 2}, []int32{3}, []int32{3}), kerr.InvalidReplicaAssignment},
		{"assignment and counts", func() kmsg.CreateTopicsRequestTopic {
			rt := withAssignment("both", []int32{0}, []int32{3})
			rt.NumPartitions = 1
			return rt
		}(), kerr.InvalidRequest},
		{"unsupported config", withConfig("stamped", "message.timestamp.type", "LogAppendTime"), kerr.InvalidConfig},
		{"config out of range", withConfig("bad-retention", "retention.ms", "-5"), kerr.InvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.RoundTrip(createTopicsRequest(7, tt.topic)).(*kmsg.CreateTopicsResponse)
			require.Len(t, resp.Topics, 1)
			st := resp.Topics[0]
			assert.Equal(t, tt.want.Code, st.ErrorCode, "got %v", kerr.ErrorForCode(st.ErrorCode))
			assert.NotNil(t, st.ErrorMessage)
			assert.Equal(t, int32(-1), st.NumPartitions)
			if tt.topic.Topic != "taken" {
				_, err := s.data.store.Topic(tt.topic.Topic)
				assert.Error(t, err, "not created")
			}
		})
	}
}

func TestCreateTopicsAssignmentAndConfigs(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 3 })
	c := dialRaw(t, s)
	rt := newTopic("assigned", -1, -1)
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1, Replicas: []int32{3}}, {Partition: 0, Replicas: []int32{3}}}
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("60000")}, {Name: "retention.bytes", Value: nil}}
	resp := c.RoundTrip(createTopicsRequest(7, rt)).(*kmsg.CreateTopicsResponse)
	st := resp.Topics[0]
	require.Equal(t, int16(0), st.ErrorCode)
	assert.Equal(t, int32(2), st.NumPartitions)
	sources := map[string]int8{}
	values := map[string]string{}
	for _, cfg := range st.Configs {
		sources[cfg.Name], values[cfg.Name] = cfg.Source, *cfg.Value
	}
	assert.Equal(t, "60000", values["retention.ms"])
	assert.Equal(t, int8(kmsg.ConfigSourceDynamicTopicConfig), sources["retention.ms"])
	assert.Equal(t, int8(kmsg.ConfigSourceDefaultConfig), sources["retention.bytes"], "a null value keeps the default")
	topic, err := s.data.store.Topic("assigned")
	require.NoError(t, err)
	assert.Equal(t, int64(60000), topic.Config().Retention.Milliseconds())
}

func TestCreateTopicsDefaultsAndDuplicates(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NumPartitions = 5 })
	c := dialRaw(t, s)
	resp := c.RoundTrip(createTopicsRequest(7, newTopic("defaults", -1, -1), newTopic("twice", 1, 1), newTopic("twice", 1, 1))).(*kmsg.CreateTopicsResponse)
	require.Len(t, resp.Topics, 3)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	assert.Equal(t, int32(5), resp.Topics[0].NumPartitions, "-1 takes num.partitions")
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[1].ErrorCode, "a topic listed twice")
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[2].ErrorCode)
	_, err := s.data.store.Topic("twice")
	assert.Error(t, err)
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "taken", 1)
	c := dialRaw(t, s)
	req := createTopicsRequest(7, newTopic("checked", 3, 1), newTopic("taken", 1, 1))
	req.ValidateOnly = true
	resp := c.RoundTrip(req).(*kmsg.CreateTopicsResponse)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	assert.Equal(t, int32(3), resp.Topics[0].NumPartitions)
	assert.Equal(t, [16]byte{}, resp.Topics[0].TopicID, "no topic, no id")
	assert.Equal(t, kerr.TopicAlreadyExists.Code, resp.Topics[1].ErrorCode)
	_, err := s.data.store.Topic("checked")
	assert.Error(t, err, "validate only creates nothing")
}

func TestDeleteTopicsEveryVersion(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, v := range versions(0, 6) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := fmt.Sprintf("doomed-v%d", v)
			topic := createTopic(t, s, name, 1)
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.SetVersion(v)
			if v < 6 {
				req.TopicNames = []string{name, "missing"}
			} else {
				req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(name)}, {Topic: kmsg.StringPtr("missing")}}
			}
			resp := c.RoundTrip(req).(*kmsg.DeleteTopicsResponse)
			require.Len(t, resp.Topics, 2)
			assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
			assert.Equal(t, name, *resp.Topics[0].Topic)
			if v >= 6 {
				assert.Equal(t, [16]byte(topic.ID), resp.Topics[0].TopicID)
			}
			assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].ErrorCode)
			assert.True(t, topic.Deleted())
		})
	}
}

func TestDeleteTopicsByID(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "by-id", 1)
	other := createTopic(t, s, "other", 1)
	c := dialRaw(t, s)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		{TopicID: topic.ID},
		{TopicID: [16]byte{1}},
		{Topic: kmsg.StringPtr("other"), TopicID: other.ID},
	}
	resp := c.RoundTrip(req).(*kmsg.DeleteTopicsResponse)
	require.Len(t, resp.Topics, 3)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	assert.Equal(t, "by-id", *resp.Topics[0].Topic, "the name is filled in")
	assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[1].ErrorCode)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[2].ErrorCode, "a name and an id")
	assert.True(t, topic.Deleted())
	assert.False(t, other.Deleted())
}
