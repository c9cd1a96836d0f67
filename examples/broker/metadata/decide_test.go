package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var topicA = TopicID{1}

// imageWith returns an image with brokers 1 to 3 registered and topic "a"
// of three partitions of rf 3, placed by Place.
func imageWith(t *testing.T) *Image {
	t.Helper()
	im := Empty()
	var rec Record
	for id := int32(1); id <= 3; id++ {
		rec.Brokers = append(rec.Brokers, Broker{ID: id, Epoch: int64(id)})
	}
	im = im.Apply(1, &rec)
	top, err := Place(im, []int32{1, 2, 3}, "a", topicA, 3, 3, nil)
	require.NoError(t, err)
	return im.Apply(2, &Record{CreateTopics: []*Topic{top}})
}

// partition returns partition index of topic "a".
func partition(t *testing.T, im *Image, index int32) Partition {
	t.Helper()
	return partitionOf(t, im, topicA, index)
}

// partitionOf returns partition index of topic.
func partitionOf(t *testing.T, im *Image, topic TopicID, index int32) Partition {
	t.Helper()
	p, err := im.Partition(topic, index)
	require.NoError(t, err)
	return p
}

func TestPlaceSpreadsLeadership(t *testing.T) {
	im := imageWith(t)
	for i, want := range [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}} {
		p := partition(t, im, int32(i))
		assert.Equal(t, want, p.Replicas, "partition %d", i)
		assert.Equal(t, want[0], p.Leader, "partition %d", i)
		assert.Equal(t, want, p.ISR, "partition %d: every replica in sync, in replica order", i)
	}
	_, err := Place(im, []int32{1, 2, 3}, "b", TopicID{2}, 1, 4, nil)
	assert.ErrorIs(t, err, ErrNoBrokers)
}

func TestPlaceSkipsFencedBrokers(t *testing.T) {
	im := imageWith(t)
	im = im.Apply(3, new(Fence(im, 1, false)))
	top, err := Place(im, []int32{1, 2, 3}, "b", TopicID{2}, 1, 3, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(2), top.Partitions[0].Leader, "the first unfenced replica leads")
	assert.Equal(t, []int32{2, 3}, top.Partitions[0].ISR)
}

func TestFenceElectsFromISR(t *testing.T) {
	im := imageWith(t)
	rec := Fence(im, 1, false)
	im = im.Apply(3, &rec)
	assert.True(t, im.Fenced(1))

	p0 := partition(t, im, 0) // led by 1
	assert.Equal(t, int32(2), p0.Leader, "the next replica of the ISR leads")
	assert.Equal(t, int32(1), p0.LeaderEpoch, "the leader epoch is bumped")
	assert.Equal(t, int32(1), p0.PartitionEpoch)
	assert.Equal(t, []int32{2, 3}, p0.ISR, "the fenced broker leaves the ISR at once")

	p1 := partition(t, im, 1) // led by 2, followed by 1
	assert.Equal(t, int32(2), p1.Leader)
	assert.Equal(t, int32(0), p1.LeaderEpoch, "a follower's fencing keeps the leader and its epoch")
	assert.Equal(t, int32(1), p1.PartitionEpoch)
	assert.Equal(t, []int32{2, 3}, p1.ISR)

	assert.True(t, Fence(im, 1, false).Empty(), "fencing a fenced broker changes nothing")
}

func TestFenceLastISRMemberTakesPartitionOffline(t *testing.T) {
	im := imageWith(t)
	im = im.Apply(3, new(Fence(im, 2, false)))
	im = im.Apply(4, new(Fence(im, 3, false)))
	p1 := partition(t, im, 1)
	assert.Equal(t, int32(1), p1.Leader, "broker 1 is the only unfenced replica")
	assert.Equal(t, []int32{1}, p1.ISR)

	im = im.Apply(5, new(Fence(im, 1, false)))
	for i := range int32(3) {
		p := partition(t, im, i)
		assert.True(t, p.Offline(), "partition %d has no live replica in its ISR", i)
		assert.Equal(t, []int32{1}, p.ISR, "partition %d: the last member stays, alone eligible", i)
	}

	// Broker 3 comes back: it is not in any ISR, so nothing may be led
	// by it (no unclean election).
	im = im.Apply(6, new(Register(im, 3, 60, false)))
	for i := range int32(3) {
		assert.True(t, partition(t, im, i).Offline(), "partition %d stays offline", i)
	}
	// Broker 1, the last in sync, comes back and leads again.
	before := partition(t, im, 0).LeaderEpoch
	im = im.Apply(7, new(Register(im, 1, 70, false)))
	for i := range int32(3) {
		p := partition(t, im, i)
		assert.Equal(t, int32(1), p.Leader, "partition %d", i)
		assert.Greater(t, p.LeaderEpoch, before-1, "partition %d", i)
	}
	assert.Greater(t, partition(t, im, 0).LeaderEpoch, before, "a new leadership is a new epoch")
}

func TestRegisterRestartLeavesISR(t *testing.T) {
	im := imageWith(t)
	assert.True(t, Register(im, 2, 2, false).Empty(), "a current registration changes nothing")
	rec := Register(im, 2, 20, false) // broker 2 restarted: it may have lost its logs
	im = im.Apply(3, &rec)
	b, ok := im.Broker(2)
	require.True(t, ok)
	assert.Equal(t, Broker{ID: 2, Epoch: 20}, b)
	p1 := partition(t, im, 1)
	assert.Equal(t, int32(3), p1.Leader, "its leadership moved")
	assert.Equal(t, []int32{3, 1}, p1.ISR, "it left the ISR, in replica order")
	assert.False(t, partition(t, im, 0).InISR(2))
}

// A topic created while broker 1 is still starting is placed on it (a
// broker that never registered is not fenced); its first registration
// keeps what it was given, rather than move every leadership it holds at
// the cluster's start.
func TestFirstRegistrationKeepsWhatPlaceGave(t *testing.T) {
	im := Empty()
	rec := Record{Brokers: []Broker{{ID: 2, Epoch: 2}, {ID: 3, Epoch: 3}}}
	im = im.Apply(1, &rec)
	top, err := Place(im, []int32{1, 2, 3}, "a", topicA, 3, 3, nil)
	require.NoError(t, err)
	im = im.Apply(2, &Record{CreateTopics: []*Topic{top}})
	require.Equal(t, int32(1), partition(t, im, 0).Leader, "placed on the unregistered broker")

	rec = Register(im, 1, 1, false)
	assert.Empty(t, rec.Partitions, "no partition changes")
	im = im.Apply(3, &rec)
	p0 := partition(t, im, 0)
	assert.Equal(t, int32(1), p0.Leader)
	assert.Equal(t, int32(0), p0.LeaderEpoch)
	assert.Equal(t, []int32{1, 2, 3}, p0.ISR)

	rec = Register(im, 1, 10, false) // a restart, now: it leaves the ISR
	im = im.Apply(4, &rec)
	assert.Equal(t, int32(2), partition(t, im, 0).Leader)
}

func TestAlterISR(t *testing.T) {
	im := imageWith(t)
	tests := []struct {
		name                        string
		leader, leaderEpoch, pEpoch int32
		isr                         []int32
		err                         error
	}{
		{name: "shrink", leader: 1, isr: []int32{1, 3}},
		{name: "unchanged", leader: 1, isr: []int32{1, 2, 3}},
		{name: "stale leader epoch", leader: 1, leaderEpoch: 1, isr: []int32{1}, err: ErrFencedLeaderEpoch},
		{name: "not the leader", leader: 2, isr: []int32{2}, err: ErrNotLeader},
		{name: "stale partition epoch", leader: 1, pEpoch: 5, isr: []int32{1}, err: ErrStalePartitionEpoch},
		{name: "without the leader", leader: 1, isr: []int32{2, 3}, err: ErrInvalidISR},
		{name: "not a replica", leader: 1, isr: []int32{1, 4}, err: ErrInvalidISR},
		{name: "twice", leader: 1, isr: []int32{1, 1}, err: ErrInvalidISR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := AlterISR(im, topicA, 0, tt.leader, tt.leaderEpoch, tt.pEpoch, tt.isr)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			next := im.Apply(3, &rec)
			p := partition(t, next, 0)
			assert.Equal(t, tt.isr, p.ISR)
			if rec.Empty() {
				assert.Equal(t, int32(0), p.PartitionEpoch, "no change, no new epoch")
			} else {
				assert.Equal(t, int32(1), p.PartitionEpoch, "the partition epoch is bumped")
			}
			assert.Equal(t, int32(0), p.LeaderEpoch, "an ISR change keeps the leader epoch")
		})
	}

	// A fenced broker cannot be added back.
	shrunk := im.Apply(3, new(Fence(im, 3, false)))
	p := partition(t, shrunk, 0)
	_, err := AlterISR(shrunk, topicA, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
	assert.ErrorIs(t, err, ErrInvalidISR)
}

func TestApplyLeavesOldImage(t *testing.T) {
	im := imageWith(t)
	next := im.Apply(3, new(Fence(im, 1, false)))
	assert.Equal(t, int32(1), partition(t, im, 0).Leader, "the old image is unchanged")
	assert.Equal(t, int32(2), partition(t, next, 0).Leader)
	assert.False(t, im.Fenced(1))

	gone := next.Apply(4, &Record{DeleteTopics: []TopicID{topicA}})
	_, err := gone.Topic("a")
	assert.ErrorIs(t, err, ErrUnknownTopic)
	_, err = next.Topic("a")
	assert.NoError(t, err)
	// A change to a deleted topic is skipped alike everywhere.
	after := gone.Apply(5, &Record{Partitions: []PartitionChange{{Topic: topicA, Index: 0}}})
	assert.Equal(t, 0, after.TopicCount())
}

func TestRecordAndSnapshotRoundTrip(t *testing.T) {
	im := imageWith(t)
	rec := Fence(im, 1, false)
	got, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, im.Apply(3, &rec), im.Apply(3, got), "a decoded record applies alike")

	im = im.Apply(3, &Record{ClusterID: "abc"})
	im = im.Apply(4, &Record{ClusterID: "other"})
	assert.Equal(t, "abc", im.ClusterID, "the first cluster id committed wins")
	b, err := MarshalImage(im)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	assert.Equal(t, im, back)
}
