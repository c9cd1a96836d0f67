package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

// TestIncrementalConfigs: SET and DELETE change the topic's own configs,
// in order; APPEND and SUBTRACT are refused on configs that are not lists
// (every config of this broker), with Kafka's message; the current set is
// never written.
func TestIncrementalConfigs(t *testing.T) {
	current := map[string]string{"retention.ms": "1000", "max.message.bytes": "5000"}
	next, err := IncrementalConfigs(current, []ConfigChange{
		{Name: "retention.ms", Op: ConfigDelete},
		{Name: "min.insync.replicas", Op: ConfigSet, Value: ptr("2")},
		{Name: "not.there", Op: ConfigDelete},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"max.message.bytes": "5000", "min.insync.replicas": "2"}, next)
	assert.Equal(t, map[string]string{"retention.ms": "1000", "max.message.bytes": "5000"}, current, "the current set is left as it was")

	for _, op := range []ConfigOp{ConfigAppend, ConfigSubtract} {
		_, err := IncrementalConfigs(current, []ConfigChange{{Name: "retention.ms", Op: op, Value: ptr("1")}})
		require.ErrorIs(t, err, ErrInvalidConfig)
		assert.Contains(t, err.Error(), "to key retention.ms because its type is not LIST.")
	}
	_, err = IncrementalConfigs(current, []ConfigChange{{Name: "retention.ms", Op: ConfigAppend, Value: ptr("1")}})
	assert.EqualError(t, err, "Can't APPEND to key retention.ms because its type is not LIST.", "Kafka's message, as clients show it")
	_, err = IncrementalConfigs(current, []ConfigChange{{Name: "retention.ms", Op: 7}})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = IncrementalConfigs(nil, []ConfigChange{{Name: "retention.ms", Op: ConfigSet}})
	assert.ErrorIs(t, err, ErrInvalidConfig, "SET needs a value")
}

// TestIncrementalListConfigs: cleanup.policy and the throttled-replica
// lists are Kafka's lists among the topic configs here: APPEND adds the
// items it lacks to the topic's own list, or to the default (delete; none)
// when it has none, and SUBTRACT removes them, as Kafka's controller does.
func TestIncrementalListConfigs(t *testing.T) {
	tests := []struct {
		name    string
		current map[string]string
		change  ConfigChange
		want    map[string]string
	}{
		{"append to the default", nil, ConfigChange{Name: "cleanup.policy", Op: ConfigAppend, Value: ptr("compact")},
			map[string]string{"cleanup.policy": "delete,compact"}},
		{"append what is there", map[string]string{"cleanup.policy": "compact"},
			ConfigChange{Name: "cleanup.policy", Op: ConfigAppend, Value: ptr("compact")}, map[string]string{"cleanup.policy": "compact"}},
		{"subtract", map[string]string{"cleanup.policy": "compact,delete"},
			ConfigChange{Name: "cleanup.policy", Op: ConfigSubtract, Value: ptr("delete")}, map[string]string{"cleanup.policy": "compact"}},
		{"subtract from the default", nil, ConfigChange{Name: "cleanup.policy", Op: ConfigSubtract, Value: ptr("compact")},
			map[string]string{"cleanup.policy": "delete"}},
		{"append a throttled replica to none", nil,
			ConfigChange{Name: "leader.replication.throttled.replicas", Op: ConfigAppend, Value: ptr("0:1, 1:2")},
			map[string]string{"leader.replication.throttled.replicas": "0:1,1:2"}},
		{"subtract a throttled replica", map[string]string{"follower.replication.throttled.replicas": "0:1,1:2"},
			ConfigChange{Name: "follower.replication.throttled.replicas", Op: ConfigSubtract, Value: ptr("0:1")},
			map[string]string{"follower.replication.throttled.replicas": "1:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := IncrementalConfigs(tt.current, []ConfigChange{tt.change})
			require.NoError(t, err)
			assert.Equal(t, tt.want, next)
		})
	}
}

// TestSetTopicConfigs: the record replaces the topic's own configs in the
// new image only; an unknown topic is refused.
func TestSetTopicConfigs(t *testing.T) {
	im := imageWith(t)
	rec, err := SetTopicConfigs(im, "a", map[string]string{"max.message.bytes": "100"}, false)
	require.NoError(t, err)
	assert.Equal(t, []TopicConfigs{{Topic: topicA, Configs: map[string]string{"max.message.bytes": "100"}}}, rec.TopicConfigs)
	assert.Empty(t, rec.Partitions, "nothing to elect")
	assert.False(t, rec.Empty())

	next := im.Apply(3, &rec)
	top, err := next.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"max.message.bytes": "100"}, top.Configs)
	old, err := im.Topic("a")
	require.NoError(t, err)
	assert.Empty(t, old.Configs, "the image before is left as it was")

	rec, err = SetTopicConfigs(next, "a", nil, false)
	require.NoError(t, err)
	top, err = next.Apply(4, &rec).Topic("a")
	require.NoError(t, err)
	assert.Empty(t, top.Configs, "an empty set removes every own config (AlterConfigs)")

	_, err = SetTopicConfigs(im, "nope", nil, false)
	assert.ErrorIs(t, err, ErrUnknownTopic)

	gone := im.Apply(3, &Record{DeleteTopics: []TopicID{topicA}, TopicConfigs: []TopicConfigs{{Topic: topicA}}})
	_, err = gone.TopicByID(topicA)
	assert.ErrorIs(t, err, ErrUnknownTopic, "configs of a topic deleted are skipped")
}

// TestSetTopicConfigsElectsUncleanly: unclean.leader.election.enable set
// to true (or left to a cluster default of true) elects, in the same
// record, a live replica for each offline partition of the topic, alone
// in its ISR, as Kafka's controller does on that config change; set to
// false, or with no live replica, nothing is elected.
func TestSetTopicConfigsElectsUncleanly(t *testing.T) {
	offline := func(t *testing.T) *Image {
		im := imageShrunk(t, nil) // "u": replicas [1 2 3], ISR [1]
		im = im.Apply(5, new(Fence(im, 1, false)))
		require.True(t, partitionU(t, im).Offline())
		return im
	}
	for _, tc := range []struct {
		name    string
		configs map[string]string
		def     bool
		leader  int32
	}{
		{"set to true", map[string]string{ConfigUncleanLeaderElection: "true"}, false, 2},
		{"the cluster's default, another config set", map[string]string{"retention.ms": "1"}, true, 2},
		{"set to false", map[string]string{ConfigUncleanLeaderElection: "false"}, true, NoLeader},
		{"not set", map[string]string{"retention.ms": "1"}, false, NoLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := offline(t)
			before := partitionU(t, im)
			rec, err := SetTopicConfigs(im, "u", tc.configs, tc.def)
			require.NoError(t, err)
			p := partitionU(t, im.Apply(6, &rec))
			assert.Equal(t, tc.leader, p.Leader)
			if tc.leader != NoLeader {
				assert.Equal(t, []int32{tc.leader}, p.ISR, "alone in the ISR")
				assert.Equal(t, before.LeaderEpoch+1, p.LeaderEpoch)
			} else {
				assert.Equal(t, before, p)
			}
		})
	}

	im := offline(t)
	im = im.Apply(6, new(Fence(im, 2, false)))
	im = im.Apply(7, new(Fence(im, 3, false)))
	rec, err := SetTopicConfigs(im, "u", map[string]string{ConfigUncleanLeaderElection: "true"}, false)
	require.NoError(t, err, "no live replica: the configs are set all the same")
	assert.Empty(t, rec.Partitions)
	assert.Len(t, rec.TopicConfigs, 1)

	// A partition that has a leader is left alone.
	im = imageShrunk(t, nil)
	rec, err = SetTopicConfigs(im, "u", map[string]string{ConfigUncleanLeaderElection: "true"}, false)
	require.NoError(t, err)
	assert.Empty(t, rec.Partitions)
}

// TestTopicConfigsRecordRoundTrip: the record survives the log's encoding,
// a record written before the field existed still decodes, and a snapshot
// holds the topic's new configs.
func TestTopicConfigsRecordRoundTrip(t *testing.T) {
	im := imageWith(t)
	rec, err := SetTopicConfigs(im, "a", map[string]string{"retention.ms": "5"}, false)
	require.NoError(t, err)
	back, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, &rec, back)

	old, err := DecodeRecord([]byte(`{"add_partitions":[{"topic":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"from":3,"partitions":[]}]}`))
	require.NoError(t, err)
	assert.Empty(t, old.TopicConfigs)
	assert.Len(t, old.AddPartitions, 1)

	snap, err := MarshalImage(im.Apply(3, &rec))
	require.NoError(t, err)
	restored, err := UnmarshalImage(snap)
	require.NoError(t, err)
	top, err := restored.Topic("a")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"retention.ms": "5"}, top.Configs)
}
