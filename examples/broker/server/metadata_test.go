package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataRequest(v int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadataDescribesTheBroker(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NodeID = 7 })
	topic := createTopic(t, s, "orders", 3)
	c := dialRaw(t, s)
	for _, v := range versions(0, 13) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp := c.RoundTrip(metadataRequest(v, "orders")).(*kmsg.MetadataResponse)
			require.Len(t, resp.Brokers, 1)
			assert.Equal(t, int32(7), resp.Brokers[0].NodeID)
			assert.Equal(t, s.host, resp.Brokers[0].Host)
			assert.Equal(t, s.port, resp.Brokers[0].Port)
			if v >= 1 {
				assert.Equal(t, int32(7), resp.ControllerID)
			}
			if v >= 2 {
				require.NotNil(t, resp.ClusterID)
				assert.Equal(t, s.data.clusterID, *resp.ClusterID)
			}
			require.Len(t, resp.Topics, 1)
			mt := resp.Topics[0]
			assert.Equal(t, int16(0), mt.ErrorCode)
			assert.Equal(t, "orders", *mt.Topic)
			if v >= 10 {
				assert.Equal(t, [16]byte(topic.ID), mt.TopicID)
			}
			if v >= 8 {
				assert.Equal(t, int32(-2147483648), mt.AuthorizedOperations, "not requested")
			}
			require.Len(t, mt.Partitions, 3)
			for i, p := range mt.Partitions {
				assert.Equal(t, int32(i), p.Partition)
				assert.Equal(t, int32(7), p.Leader)
				assert.Equal(t, []int32{7}, p.Replicas)
				assert.Equal(t, []int32{7}, p.ISR)
				if v >= 7 {
					assert.Equal(t, int32(0), p.LeaderEpoch)
				}
			}
		})
	}
}

func TestMetadataAllTopics(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "b", 1)
	createTopic(t, s, "a", 2)
	c := dialRaw(t, s)

	v0 := c.RoundTrip(metadataRequest(0)).(*kmsg.MetadataResponse)
	assert.Len(t, v0.Topics, 2, "v0: an empty list is every topic")

	all := metadataRequest(12)
	all.Topics = nil
	resp := c.RoundTrip(all).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 2, "a null list is every topic")
	assert.Equal(t, "a", *resp.Topics[0].Topic)
	assert.Equal(t, "b", *resp.Topics[1].Topic)

	none := metadataRequest(12)
	none.Topics = []kmsg.MetadataRequestTopic{}
	resp = c.RoundTrip(none).(*kmsg.MetadataResponse)
	assert.Empty(t, resp.Topics, "v1+: an empty list is no topic")
}

func TestMetadataAutoCreation(t *testing.T) {
	tests := []struct {
		name       string
		autoCreate bool
		rf         int16
		allow      bool
		topic      string
		want       int16
	}{
		{"created", true, 1, true, "new", kerr.LeaderNotAvailable.Code},
		{"client does not allow it", true, 1, false, "new", kerr.UnknownTopicOrPartition.Code},
		{"broker does not allow it", false, 1, true, "new", kerr.UnknownTopicOrPartition.Code},
		{"invalid name", true, 1, true, "bad/name", kerr.InvalidTopicException.Code},
		{"replication above the brokers", true, 3, true, "new", kerr.InvalidReplicationFactor.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, func(c *Config) {
				c.AutoCreateTopics, c.DefaultReplication, c.NumPartitions = tt.autoCreate, tt.rf, 4
			})
			c := dialRaw(t, s)
			req := metadataRequest(12, tt.topic, tt.topic)
			req.AllowAutoTopicCreation = tt.allow
			resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
			require.Len(t, resp.Topics, 1, "a topic asked twice is answered once")
			assert.Equal(t, tt.want, resp.Topics[0].ErrorCode)
			_, err := s.data.store.Topic(tt.topic)
			if tt.want == kerr.LeaderNotAvailable.Code {
				// Created; as Kafka, the answer that creates a topic
				// says LEADER_NOT_AVAILABLE, and the next finds it.
				require.NoError(t, err)
				assert.Empty(t, resp.Topics[0].Partitions)
				again := c.RoundTrip(req).(*kmsg.MetadataResponse)
				require.Len(t, again.Topics, 1)
				assert.Equal(t, int16(0), again.Topics[0].ErrorCode)
				assert.Len(t, again.Topics[0].Partitions, 4, "num.partitions")
				assert.NotEqual(t, [16]byte{}, again.Topics[0].TopicID)
			} else {
				assert.Error(t, err, "not created")
				assert.Empty(t, resp.Topics[0].Partitions)
			}
		})
	}
}

func TestMetadataBeforeV4AlwaysAutoCreates(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	resp := c.RoundTrip(metadataRequest(3, "implicit")).(*kmsg.MetadataResponse)
	assert.Equal(t, kerr.LeaderNotAvailable.Code, resp.Topics[0].ErrorCode, "being created")
	resp = c.RoundTrip(metadataRequest(3, "implicit")).(*kmsg.MetadataResponse)
	assert.Equal(t, int16(0), resp.Topics[0].ErrorCode, "created")
}

func TestMetadataByTopicID(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "by-id", 2)
	c := dialRaw(t, s)
	req := metadataRequest(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: topic.ID}, {TopicID: [16]byte{9}}}
	resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 2)
	assert.Equal(t, "by-id", *resp.Topics[0].Topic)
	assert.Len(t, resp.Topics[0].Partitions, 2)
	assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[1].ErrorCode)
	assert.Equal(t, [16]byte{9}, resp.Topics[1].TopicID)
}
