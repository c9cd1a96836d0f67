package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataOf(version int16, controller int32, topics ...kmsg.MetadataResponseTopic) *kmsg.MetadataResponse {
	m := kmsg.NewPtrMetadataResponse()
	m.Version = version
	m.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "h1", Port: 1}, {NodeID: 2, Host: "h2", Port: 2}}
	m.ControllerID = controller
	m.Topics = topics
	return m
}

func topicOf(name string, id byte, leaders ...int32) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID = &name, [16]byte{id}
	for i, l := range leaders {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader, p.LeaderEpoch = int32(i), l, 5
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

func TestAbsorb(t *testing.T) {
	cl := newTestCluster(t, "127.0.0.1:1")
	cl.Absorb(metadataOf(12, 2, topicOf("a", 1, 1, 2), topicOf("b", 2, 2)), true)

	leader, epoch, ok := cl.Leader("a", 1)
	require.True(t, ok)
	assert.Equal(t, int32(2), leader)
	assert.Equal(t, int32(5), epoch)
	assert.Equal(t, int32(2), cl.Controller())
	name, ok := cl.TopicName([16]byte{2})
	assert.True(t, ok)
	assert.Equal(t, "b", name)
	addr, ok := cl.Addr(1)
	assert.True(t, ok)
	assert.Equal(t, "h1:1", addr)

	t.Run("an old client's metadata keeps the epochs and ids it lacks", func(t *testing.T) {
		old := topicOf("a", 0, 1, 2)
		for i := range old.Partitions {
			old.Partitions[i].LeaderEpoch = -1
		}
		cl.Absorb(metadataOf(4, 2, old), false)
		_, epoch, _ := cl.Leader("a", 0)
		assert.Equal(t, int32(5), epoch)
		id, _ := cl.TopicID("a")
		assert.Equal(t, [16]byte{1}, id)
	})
	t.Run("a partial answer keeps the other topics", func(t *testing.T) {
		cl.Absorb(metadataOf(12, 2, topicOf("a", 1, 2, 2)), false)
		_, _, ok := cl.Leader("b", 0)
		assert.True(t, ok, "b is still known")
		leader, _, _ := cl.Leader("a", 0)
		assert.Equal(t, int32(2), leader, "a's leader moved")
	})
	t.Run("an unknown topic is dropped", func(t *testing.T) {
		gone := topicOf("b", 2)
		gone.ErrorCode = kerr.UnknownTopicOrPartition.Code
		cl.Absorb(metadataOf(12, 2, gone), false)
		_, _, ok := cl.Leader("b", 0)
		assert.False(t, ok)
		_, ok = cl.TopicName([16]byte{2})
		assert.False(t, ok, "with its id")
	})
	t.Run("every topic's answer drops the topics it does not list", func(t *testing.T) {
		cl.Absorb(metadataOf(12, 1, topicOf("c", 3, 1)), true)
		_, _, ok := cl.Leader("a", 0)
		assert.False(t, ok)
		_, _, ok = cl.Leader("c", 0)
		assert.True(t, ok)
	})
	t.Run("a leader the brokers do not list is no leader", func(t *testing.T) {
		cl.Absorb(metadataOf(12, 1, topicOf("d", 4, 9)), false)
		_, _, ok := cl.Leader("d", 0)
		assert.False(t, ok)
	})
}

func TestVersionsAreWhatEveryBrokerServes(t *testing.T) {
	cl := newTestCluster(t, "127.0.0.1:1")
	answer := func(ranges map[kmsg.Key][2]int16) *kmsg.ApiVersionsResponse {
		r := kmsg.NewPtrApiVersionsResponse()
		for k, v := range ranges {
			r.ApiKeys = append(r.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: v[0], MaxVersion: v[1]})
		}
		return r
	}
	_, err := cl.addVersions(&Conn{addr: "a:1"}, answer(map[kmsg.Key][2]int16{kmsg.Fetch: {4, 18}, kmsg.Produce: {3, 13}, kmsg.EndTxn: {0, 4}}))
	require.NoError(t, err)
	vs, err := cl.addVersions(&Conn{addr: "b:1"}, answer(map[kmsg.Key][2]int16{kmsg.Fetch: {0, 12}, kmsg.Produce: {5, 11}}))
	require.NoError(t, err)
	assert.Equal(t, Versions{int16(kmsg.Fetch): {4, 12}, int16(kmsg.Produce): {5, 11}}, vs, "the intersection; EndTxn only one serves")
	assert.Equal(t, int16(12), vs.Max(kmsg.Fetch))
	assert.Equal(t, int16(-1), vs.Max(kmsg.EndTxn))

	var got Versions
	cl.Versions(func(v Versions, err error) { got = v; assert.NoError(t, err) })
	assert.Equal(t, vs, got, "known: answered before Versions returns")
}
