package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var brokers123 = []int32{1, 2, 3}

// TestAddPartitionsPlacement: new partitions are placed exactly where
// Place would have put them had the topic been created with them.
func TestAddPartitionsPlacement(t *testing.T) {
	im := imageWith(t) // "a": 3 partitions of rf 3 on brokers 1-3
	added, err := AddPartitions(im, brokers123, "a", 5, nil)
	require.NoError(t, err)
	placed, err := Place(im, brokers123, "a", topicA, 5, 3, nil)
	require.NoError(t, err)
	assert.Equal(t, NewPartitions{Topic: topicA, From: 3, Partitions: placed.Partitions[3:]}, added)
	assert.Equal(t, []int32{1, 2, 3}, added.Partitions[0].Replicas, "partition 3: from broker index 3 mod 3")
	assert.Equal(t, []int32{2, 3, 1}, added.Partitions[1].Replicas)

	im = im.Apply(3, new(Fence(im, 1, false)))
	added, err = AddPartitions(im, brokers123, "a", 4, nil)
	require.NoError(t, err)
	require.Len(t, added.Partitions, 1)
	assert.Equal(t, int32(2), added.Partitions[0].Leader, "the first unfenced replica leads")
	assert.Equal(t, []int32{2, 3}, added.Partitions[0].ISR)
}

func TestAddPartitionsRefuses(t *testing.T) {
	im := imageWith(t)
	tests := []struct {
		name       string
		topic      string
		count      int32
		assignment [][]int32
		want       error
		message    string
	}{
		{"unknown topic", "nope", 4, nil, ErrUnknownTopic, ""},
		{"as many", "a", 3, nil, ErrInvalidPartitions, "Topic already has 3 partition(s)."},
		{"fewer", "a", 2, nil, ErrInvalidPartitions, "The topic a currently has 3 partition(s); 2 would not be an increase."},
		{"too few assignments", "a", 5, [][]int32{{1, 2, 3}}, ErrInvalidReplicaAssignment,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"another replication factor", "a", 4, [][]int32{{1, 2}}, ErrInvalidReplicaAssignment,
			"a partition with 2 replica(s), but this is not consistent with previous partitions, which have 3 replica(s)."},
		{"elsewhere", "a", 4, [][]int32{{2, 3, 1}}, ErrInvalidReplicaAssignment,
			"partition 3 on brokers [2 3 1], but this cluster places it on [1 2 3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AddPartitions(im, brokers123, tc.topic, tc.count, tc.assignment)
			require.ErrorIs(t, err, tc.want)
			if tc.message != "" {
				assert.Contains(t, err.Error(), tc.message)
			}
		})
	}
	_, err := AddPartitions(im, brokers123, "a", 2, nil)
	assert.EqualError(t, err, "The topic a currently has 3 partition(s); 2 would not be an increase.", "Kafka's message, as clients show it")
	added, err := AddPartitions(im, brokers123, "a", 5, [][]int32{{1, 2, 3}, {2, 3, 1}})
	require.NoError(t, err, "the placement itself is a valid assignment")
	assert.Len(t, added.Partitions, 2)
}

// TestApplyAddPartitions: the record grows the topic in the new image
// only; an entry decided against another count (a growth applied
// meanwhile) is skipped, as every broker skips it.
func TestApplyAddPartitions(t *testing.T) {
	im := imageWith(t)
	added, err := AddPartitions(im, brokers123, "a", 5, nil)
	require.NoError(t, err)
	rec := &Record{AddPartitions: []NewPartitions{added}}
	assert.False(t, rec.Empty())
	next := im.Apply(3, rec)
	top, err := next.TopicByID(topicA)
	require.NoError(t, err)
	require.Len(t, top.Partitions, 5)
	p, err := next.Partition(topicA, 4)
	require.NoError(t, err)
	assert.Equal(t, added.Partitions[1], p)
	old, err := im.TopicByID(topicA)
	require.NoError(t, err)
	assert.Len(t, old.Partitions, 3, "the image before is left as it was")

	again := next.Apply(4, rec)
	top, err = again.TopicByID(topicA)
	require.NoError(t, err)
	assert.Len(t, top.Partitions, 5, "a record decided against 3 partitions does not apply to 5")

	gone := im.Apply(3, &Record{DeleteTopics: []TopicID{topicA}, AddPartitions: []NewPartitions{added}})
	_, err = gone.TopicByID(topicA)
	assert.ErrorIs(t, err, ErrUnknownTopic, "a growth of a topic deleted is skipped")

	// A partition change in the same record may name a new partition:
	// partitions are added before changes apply.
	changed := added.Partitions[0].clone()
	changed.PartitionEpoch++
	withChange := im.Apply(3, &Record{AddPartitions: []NewPartitions{added},
		Partitions: []PartitionChange{{Topic: topicA, Index: 3, Partition: changed}}})
	p, err = withChange.Partition(topicA, 3)
	require.NoError(t, err)
	assert.Equal(t, changed, p)
}

// TestAddPartitionsRecordRoundTrip: the record survives the log's
// encoding, and a record written before the field existed still decodes.
func TestAddPartitionsRecordRoundTrip(t *testing.T) {
	im := imageWith(t)
	added, err := AddPartitions(im, brokers123, "a", 4, nil)
	require.NoError(t, err)
	rec := Record{AddPartitions: []NewPartitions{added}}
	back, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, &rec, back)

	old, err := DecodeRecord([]byte(`{"delete_topics":[[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]]}`))
	require.NoError(t, err)
	assert.Empty(t, old.AddPartitions)
	assert.Equal(t, []TopicID{topicA}, old.DeleteTopics)

	snap, err := MarshalImage(im.Apply(3, &rec))
	require.NoError(t, err)
	restored, err := UnmarshalImage(snap)
	require.NoError(t, err)
	top, err := restored.TopicByID(topicA)
	require.NoError(t, err)
	assert.Len(t, top.Partitions, 4, "a snapshot holds the grown topic")
}
