package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var topicB = TopicID{2}

var threeBrokers = []int32{1, 2, 3}

// imageRF1 returns imageWith plus topic "b" of three partitions of one
// replica each: partition i on broker i+1.
func imageRF1(t *testing.T) *Image {
	t.Helper()
	im := imageWith(t)
	top, err := Place(im, threeBrokers, "b", topicB, 3, 1, nil)
	require.NoError(t, err)
	return im.Apply(3, &Record{CreateTopics: []*Topic{top}})
}

// reassign applies the reassignments of reqs to im, each of which must
// succeed.
func reassign(t *testing.T, im *Image, unclean bool, reqs ...Reassignment) *Image {
	t.Helper()
	rec, results := Reassign(im, threeBrokers, reqs, true, unclean)
	for i, err := range results {
		require.NoError(t, err, "reassignment %d", i)
	}
	return im.Apply(im.Index+1, &rec)
}

// alterISR applies the ISR change of partition index of topic that its
// leader asks, which must succeed.
func alterISR(t *testing.T, im *Image, topic TopicID, index int32, isr ...int32) *Image {
	t.Helper()
	p := partitionOf(t, im, topic, index)
	rec, err := AlterISR(im, topic, index, p.Leader, p.LeaderEpoch, p.PartitionEpoch, isr)
	require.NoError(t, err)
	return im.Apply(im.Index+1, &rec)
}

// TestReassignMovesPartition: a partition of one replica moved to another
// broker runs on both until the new one is in the ISR, and the ISR change
// that adds it completes the move: the new broker alone leads, at a new
// leader epoch.
func TestReassignMovesPartition(t *testing.T) {
	im := imageRF1(t)
	was := partitionOf(t, im, topicB, 0)
	require.Equal(t, []int32{1}, was.Replicas)

	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{2}})
	p := partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{2, 1}, p.Replicas, "the target, then the replicas it drops")
	assert.Equal(t, []int32{2}, p.AddingReplicas)
	assert.Equal(t, []int32{1}, p.RemovingReplicas)
	assert.Equal(t, []int32{1}, p.ISR, "the ISR waits for the new replica")
	assert.Equal(t, int32(1), p.Leader)
	assert.Equal(t, was.LeaderEpoch, p.LeaderEpoch, "adding replicas moves no leader epoch")
	assert.Equal(t, was.PartitionEpoch+1, p.PartitionEpoch)
	assert.True(t, p.Reassigning())

	im = alterISR(t, im, topicB, 0, 1, 2)
	p = partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{2}, p.Replicas)
	assert.Equal(t, []int32{2}, p.ISR)
	assert.Equal(t, int32(2), p.Leader, "the leader left with its replica")
	assert.Equal(t, was.LeaderEpoch+1, p.LeaderEpoch)
	assert.Equal(t, was.PartitionEpoch+2, p.PartitionEpoch)
	assert.False(t, p.Reassigning())
}

// TestReassignGrowKeepsLeader: a reassignment that only adds a replica
// completes when it joins the ISR, with the leader and its epoch kept.
func TestReassignGrowKeepsLeader(t *testing.T) {
	im := imageRF1(t)
	was := partitionOf(t, im, topicB, 0)
	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{1, 3}})
	p := partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{1, 3}, p.Replicas)
	assert.Equal(t, []int32{3}, p.AddingReplicas)
	assert.Empty(t, p.RemovingReplicas)

	im = alterISR(t, im, topicB, 0, 1, 3)
	p = partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{1, 3}, p.Replicas)
	assert.Equal(t, []int32{1, 3}, p.ISR)
	assert.Equal(t, int32(1), p.Leader)
	assert.Equal(t, was.LeaderEpoch, p.LeaderEpoch)
	assert.False(t, p.Reassigning())
}

// TestReassignShrinkCompletesAtOnce: a target whose replicas are all in
// the ISR already completes in the record that starts it; the leader,
// dropped, gives way to the first target replica.
func TestReassignShrinkCompletesAtOnce(t *testing.T) {
	im := imageWith(t)
	was := partitionOf(t, im, topicA, 0)
	require.Equal(t, int32(1), was.Leader)
	im = reassign(t, im, false, Reassignment{PartitionRef{topicA, 0}, []int32{3, 2}})
	p := partitionOf(t, im, topicA, 0)
	assert.Equal(t, []int32{3, 2}, p.Replicas)
	assert.Equal(t, []int32{3, 2}, p.ISR, "in replica order")
	assert.Equal(t, int32(3), p.Leader, "the first of the target")
	assert.Equal(t, was.LeaderEpoch+1, p.LeaderEpoch)
	assert.Equal(t, was.PartitionEpoch+1, p.PartitionEpoch)
	assert.False(t, p.Reassigning())
}

// TestReassignNewTargetMidFlight: a new target for a partition being
// reassigned is decided from its current replicas: the broker being added
// that the new target lacks is removed in turn. Listed twice in one
// request, a partition's second entry starts from the first's.
func TestReassignNewTargetMidFlight(t *testing.T) {
	im := imageRF1(t)
	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{2}})
	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{3}})
	p := partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{3, 1, 2}, p.Replicas)
	assert.Equal(t, []int32{3}, p.AddingReplicas)
	assert.Equal(t, []int32{1, 2}, p.RemovingReplicas)
	assert.Equal(t, []int32{1}, p.ISR)

	im = imageRF1(t)
	rec, results := Reassign(im, threeBrokers, []Reassignment{
		{PartitionRef{topicB, 1}, []int32{1}}, {PartitionRef{topicB, 1}, nil}}, true, false)
	require.NoError(t, results[0])
	require.NoError(t, results[1], "the second entry cancels what the first started")
	require.Len(t, rec.Partitions, 1)
	p = rec.Partitions[0].Partition
	assert.Equal(t, []int32{2}, p.Replicas)
	assert.False(t, p.Reassigning())
}

// TestReassignRefuses: Kafka's checks of a target, of the partition and of
// a cancel, each answered for its own partition while the others of the
// request go on.
func TestReassignRefuses(t *testing.T) {
	im := imageRF1(t)
	ok := Reassignment{PartitionRef{topicB, 2}, []int32{1}}
	rec, results := Reassign(im, threeBrokers, []Reassignment{
		{PartitionRef{topicB, 0}, []int32{}},
		{PartitionRef{topicB, 0}, []int32{2, 2}},
		{PartitionRef{topicB, 0}, []int32{2, 9}},
		{PartitionRef{topicB, 7}, []int32{2}},
		{PartitionRef{TopicID{42}, 0}, []int32{2}},
		{PartitionRef{topicB, 1}, nil},
		ok,
	}, true, false)
	assert.ErrorIs(t, results[0], ErrInvalidReplicaAssignment, "empty")
	assert.EqualError(t, results[0], "The manual partition assignment includes an empty replica list.")
	assert.ErrorIs(t, results[1], ErrInvalidReplicaAssignment, "a broker twice")
	assert.ErrorIs(t, results[2], ErrInvalidReplicaAssignment, "an unknown broker")
	assert.EqualError(t, results[2], "The manual partition assignment includes broker 9, but no such broker is registered.")
	assert.ErrorIs(t, results[3], ErrUnknownPartition)
	assert.ErrorIs(t, results[4], ErrUnknownTopic)
	assert.ErrorIs(t, results[5], ErrNoReassignmentInProgress)
	assert.NoError(t, results[6])
	require.Len(t, rec.Partitions, 1, "only the valid one")
	assert.Equal(t, int32(2), rec.Partitions[0].Index)

	_, results = Reassign(im, threeBrokers, []Reassignment{{PartitionRef{topicB, 0}, []int32{2, 3}}}, false, false)
	assert.ErrorIs(t, results[0], ErrInvalidReplicationFactor, "allow_replication_factor_change false")
	_, results = Reassign(im, threeBrokers, []Reassignment{{PartitionRef{topicB, 0}, []int32{3}}}, false, false)
	assert.NoError(t, results[0], "the same replication factor")
}

// TestCancelReassignment: a cancel reverts to the original replicas, the
// adding ones out of the ISR, at a new leader epoch (a replica left).
func TestCancelReassignment(t *testing.T) {
	im := imageRF1(t)
	was := partitionOf(t, im, topicB, 0)
	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{2, 3}})
	im = alterISR(t, im, topicB, 0, 1, 2) // 3 still catching up
	p := partitionOf(t, im, topicB, 0)
	require.True(t, p.Reassigning())
	require.Equal(t, []int32{2, 1}, p.ISR)

	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, nil})
	p = partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{1}, p.Replicas)
	assert.Equal(t, []int32{1}, p.ISR)
	assert.Equal(t, int32(1), p.Leader)
	assert.Equal(t, was.LeaderEpoch+1, p.LeaderEpoch)
	assert.False(t, p.Reassigning())
}

// TestCancelReassignmentUnclean: a cancel that would leave the ISR empty
// (only adding replicas are in it) needs an unclean election: refused
// unless the topic allows one, then the first original replica is the
// ISR.
func TestCancelReassignmentUnclean(t *testing.T) {
	im := imageRF1(t)
	im = reassign(t, im, false, Reassignment{PartitionRef{topicB, 0}, []int32{2, 3}})
	im = alterISR(t, im, topicB, 0, 1, 2)
	im = im.Apply(im.Index+1, new(Fence(im, 1, false)))
	p := partitionOf(t, im, topicB, 0)
	require.Equal(t, []int32{2}, p.ISR)
	require.Equal(t, int32(2), p.Leader)

	_, results := Reassign(im, threeBrokers, []Reassignment{{PartitionRef{topicB, 0}, nil}}, true, false)
	assert.ErrorIs(t, results[0], ErrInvalidReplicaAssignment)

	im = reassign(t, im, true, Reassignment{PartitionRef{topicB, 0}, nil})
	p = partitionOf(t, im, topicB, 0)
	assert.Equal(t, []int32{1}, p.Replicas)
	assert.Equal(t, []int32{1}, p.ISR)
	assert.Equal(t, NoLeader, p.Leader, "its one replica is fenced: offline until it is back")
}

// TestReassignmentRecordRoundTrip: a reassignment in flight survives a
// record's and a snapshot's encoding.
func TestReassignmentRecordRoundTrip(t *testing.T) {
	im := imageRF1(t)
	rec, _ := Reassign(im, threeBrokers, []Reassignment{{PartitionRef{topicB, 0}, []int32{2, 3}}}, true, false)
	got, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	after := im.Apply(9, got)
	assert.Equal(t, im.Apply(9, &rec), after)
	b, err := MarshalImage(after)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	assert.Equal(t, []int32{2, 3}, partitionOf(t, back, topicB, 0).AddingReplicas)
	assert.Equal(t, []int32{1}, partitionOf(t, back, topicB, 0).RemovingReplicas)
}

// TestReassignToCurrentReplicas: a target that is the partition's
// replicas already, with nothing in flight, succeeds with no record; in
// another order it changes the preferred leader, in a record.
func TestReassignToCurrentReplicas(t *testing.T) {
	im := imageWith(t)
	p := partition(t, im, 0)
	rec, results := Reassign(im, threeBrokers, []Reassignment{{PartitionRef{topicA, 0}, p.Replicas}}, false, false)
	require.NoError(t, results[0])
	assert.True(t, rec.Empty())

	im = reassign(t, im, false, Reassignment{PartitionRef{topicA, 0}, []int32{2, 3, 1}})
	next := partition(t, im, 0)
	assert.Equal(t, []int32{2, 3, 1}, next.Replicas)
	assert.Equal(t, []int32{2, 3, 1}, next.ISR)
	assert.Equal(t, p.Leader, next.Leader, "the leader stays: it is in the target")
	assert.Equal(t, p.LeaderEpoch, next.LeaderEpoch)
	assert.Equal(t, p.PartitionEpoch+1, next.PartitionEpoch)
}
