package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var topicU = TopicID{9}

// imageShrunk returns imageWith's brokers and a topic "u" of one partition
// on brokers 1, 2, 3, led by 1, whose ISR shrank to [1], with configs.
func imageShrunk(t *testing.T, configs map[string]string) *Image {
	t.Helper()
	im := imageWith(t)
	top, err := Place(im, []int32{1, 2, 3}, "u", topicU, 1, 3, configs)
	require.NoError(t, err)
	im = im.Apply(3, &Record{CreateTopics: []*Topic{top}})
	p, err := im.Partition(topicU, 0)
	require.NoError(t, err)
	rec, err := AlterISR(im, topicU, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1})
	require.NoError(t, err)
	return im.Apply(4, &rec)
}

func partitionU(t *testing.T, im *Image) Partition {
	t.Helper()
	p, err := im.Partition(topicU, 0)
	require.NoError(t, err)
	return p
}

func TestUncleanElection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		def     bool
		want    bool
	}{
		{"the default: false", nil, false, false},
		{"the cluster's default", nil, true, true},
		{"the topic's own", map[string]string{ConfigUncleanLeaderElection: "true"}, false, true},
		{"the topic's own, any case, over the default", map[string]string{ConfigUncleanLeaderElection: "FALSE"}, true, false},
		{"not a boolean: the default", map[string]string{ConfigUncleanLeaderElection: "yes"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, UncleanElection(&Topic{Configs: tc.configs}, tc.def))
		})
	}
}

// TestFenceElectsUncleanly: the leader of a partition whose ISR is itself
// alone is fenced; a clean election leaves it offline, an unclean one
// gives it the first live replica outside the ISR, alone in the ISR, at a
// new leader epoch.
func TestFenceElectsUncleanly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		def     bool
		leader  int32
		isr     []int32
	}{
		{"clean: offline, the last member stays", nil, false, NoLeader, []int32{1}},
		{"the topic allows it", map[string]string{ConfigUncleanLeaderElection: "true"}, false, 2, []int32{2}},
		{"the cluster allows it", nil, true, 2, []int32{2}},
		{"the topic forbids it", map[string]string{ConfigUncleanLeaderElection: "false"}, true, NoLeader, []int32{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := imageShrunk(t, tc.configs)
			before := partitionU(t, im)
			im = im.Apply(5, new(Fence(im, 1, tc.def)))
			p := partitionU(t, im)
			assert.Equal(t, tc.leader, p.Leader, "leader")
			assert.Equal(t, tc.isr, p.ISR, "ISR")
			assert.Equal(t, before.LeaderEpoch+1, p.LeaderEpoch, "a new leader epoch")
			assert.Equal(t, before.PartitionEpoch+1, p.PartitionEpoch, "a new partition epoch, once")
		})
	}

	// Broker 2 fenced too: broker 3 is the live one.
	im := imageShrunk(t, map[string]string{ConfigUncleanLeaderElection: "true"})
	im = im.Apply(5, new(Fence(im, 2, false)))
	im = im.Apply(6, new(Fence(im, 1, false)))
	assert.Equal(t, int32(3), partitionU(t, im).Leader, "the first live replica")
}

// TestRegisterElectsUncleanly: every replica is fenced, the last in-sync
// one among them; a replica outside the ISR registers again (restarted):
// with unclean election it leads, alone in the ISR; without, the
// partition stays offline until broker 1 comes back.
func TestRegisterElectsUncleanly(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		im := imageShrunk(t, nil)
		for i, id := range []int32{2, 3, 1} {
			im = im.Apply(uint64(5+i), new(Fence(im, id, unclean)))
		}
		offline := partitionU(t, im)
		require.Equal(t, NoLeader, offline.Leader)
		require.Equal(t, []int32{1}, offline.ISR)
		im = im.Apply(8, new(Register(im, 3, 30, unclean)))
		p := partitionU(t, im)
		if !unclean {
			assert.Equal(t, offline, p, "clean: broker 3 may miss acknowledged records")
			continue
		}
		assert.Equal(t, int32(3), p.Leader, "unclean: the registered replica leads")
		assert.Equal(t, []int32{3}, p.ISR)
		assert.Equal(t, offline.LeaderEpoch+1, p.LeaderEpoch)
		assert.Equal(t, offline.PartitionEpoch+1, p.PartitionEpoch)
	}
}
