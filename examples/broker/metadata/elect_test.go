package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// imageRestarted returns imageWith after broker 1 restarted (a new epoch:
// it left every ISR, and partition 0's leadership went to broker 2) and,
// with caughtUp, came back into partition 0's ISR.
func imageRestarted(t *testing.T, caughtUp bool) *Image {
	t.Helper()
	im := imageWith(t)
	im = im.Apply(3, new(Register(im, 1, 10, false)))
	p := partition(t, im, 0)
	require.Equal(t, int32(2), p.Leader, "the restart moved the leadership")
	if caughtUp {
		rec, err := AlterISR(im, topicA, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
		require.NoError(t, err)
		im = im.Apply(4, &rec)
	}
	return im
}

func TestElectPreferred(t *testing.T) {
	im := imageRestarted(t, true)
	before := partition(t, im, 0)
	rec, results := Elect(im, ElectPreferred, []PartitionRef{{topicA, 0}, {topicA, 1}, {topicA, 9}, {TopicID{42}, 0}, {topicA, 0}})
	assert.NoError(t, results[0])
	assert.ErrorIs(t, results[1], ErrElectionNotNeeded, "broker 2 leads its preferred partition")
	assert.ErrorIs(t, results[2], ErrUnknownPartition)
	assert.ErrorIs(t, results[3], ErrUnknownTopic)
	assert.NoError(t, results[4], "listed twice: the first's result")
	require.Len(t, rec.Partitions, 1, "one election for a partition listed twice")
	im = im.Apply(5, &rec)
	p := partition(t, im, 0)
	assert.Equal(t, int32(1), p.Leader)
	assert.Equal(t, before.ISR, p.ISR)
	assert.Equal(t, before.LeaderEpoch+1, p.LeaderEpoch)
	assert.Equal(t, before.PartitionEpoch+1, p.PartitionEpoch)
}

// TestElectPreferredNotAvailable: a preferred replica out of the ISR (it
// has not caught up) or fenced is not elected.
func TestElectPreferredNotAvailable(t *testing.T) {
	im := imageRestarted(t, false)
	rec, results := Elect(im, ElectPreferred, []PartitionRef{{topicA, 0}})
	assert.ErrorIs(t, results[0], ErrPreferredLeaderNotAvailable, "out of the ISR")
	assert.True(t, rec.Empty())

	im = imageRestarted(t, true)
	im = im.Apply(5, new(Fence(im, 1, false)))
	_, results = Elect(im, ElectPreferred, []PartitionRef{{topicA, 0}})
	assert.ErrorIs(t, results[0], ErrPreferredLeaderNotAvailable, "fenced")
}

// TestElectUnclean: an offline partition whose ISR is a fenced broker
// alone gets the first live replica outside it; one with a leader needs
// no election; one whose replicas are all fenced has nobody.
func TestElectUnclean(t *testing.T) {
	im := imageShrunk(t, nil)
	im = im.Apply(5, new(Fence(im, 1, false)))
	before := partitionU(t, im)
	require.True(t, before.Offline())

	rec, results := Elect(im, ElectUnclean, []PartitionRef{{topicU, 0}, {topicA, 1}})
	require.NoError(t, results[0])
	assert.ErrorIs(t, results[1], ErrElectionNotNeeded)
	im = im.Apply(6, &rec)
	p := partitionU(t, im)
	assert.Equal(t, int32(2), p.Leader)
	assert.Equal(t, []int32{2}, p.ISR)
	assert.Equal(t, before.LeaderEpoch+1, p.LeaderEpoch)

	im = imageShrunk(t, nil)
	for i, id := range []int32{1, 2, 3} {
		im = im.Apply(uint64(5+i), new(Fence(im, id, false)))
	}
	_, results = Elect(im, ElectUnclean, []PartitionRef{{topicU, 0}})
	assert.ErrorIs(t, results[0], ErrEligibleLeadersNotAvailable)
}

// TestImbalanced: broker 1 leads none of the partitions it prefers once
// it restarted; its partition is returned once it is back in the ISR,
// and not when the threshold is above its imbalance.
func TestImbalanced(t *testing.T) {
	assert.Empty(t, Imbalanced(imageWith(t), 10), "balanced")
	assert.Empty(t, Imbalanced(imageRestarted(t, false), 10), "the preferred replica is out of the ISR")
	im := imageRestarted(t, true)
	assert.Equal(t, []PartitionRef{{topicA, 0}}, Imbalanced(im, 10))
	assert.Equal(t, []PartitionRef{{topicA, 0}}, Imbalanced(im, 99), "1 of 1 not led: 100%")
	assert.Empty(t, Imbalanced(im, 100), "at most 100% is never above it")
	rec, results := Elect(im, ElectPreferred, Imbalanced(im, 10))
	require.NoError(t, results[0])
	assert.Empty(t, Imbalanced(im.Apply(5, &rec), 10), "balanced again")
}
