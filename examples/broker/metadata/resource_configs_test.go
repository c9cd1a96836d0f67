package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResourceConfigsRecordRoundTrip: broker and group configs survive
// the log's encoding and a snapshot, each entry replaces its resource's
// set whole, an empty one removes the resource, and a record written
// before the field existed decodes without it.
func TestResourceConfigsRecordRoundTrip(t *testing.T) {
	group := ConfigResource{Type: ConfigResourceGroup, Name: "g"}
	im := imageWith(t)
	rec := SetConfigs(im, ClusterDefault, map[string]string{"log.retention.ms": "5", "min.insync.replicas": "2"}, false)
	rec.Configs = append(rec.Configs, SetConfigs(im, BrokerResource(2), map[string]string{"log.retention.ms": "7"}, false).Configs...)
	rec.Configs = append(rec.Configs, SetConfigs(im, group, map[string]string{"share.auto.offset.reset": "earliest"}, false).Configs...)
	back, err := DecodeRecord(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, &rec, back)

	old, err := DecodeRecord([]byte(`{"cluster_id":"x"}`))
	require.NoError(t, err)
	assert.Empty(t, old.Configs)

	im = im.Apply(3, back)
	assert.Equal(t, map[string]string{"share.auto.offset.reset": "earliest"}, im.Configs(group))
	snap, err := MarshalImage(im)
	require.NoError(t, err)
	restored, err := UnmarshalImage(snap)
	require.NoError(t, err)
	assert.Equal(t, im.ConfigEntries(), restored.ConfigEntries(), "a snapshot holds them")
	assert.Len(t, restored.ConfigEntries(), 3)

	before := im
	im = im.Apply(4, new(SetConfigs(im, ClusterDefault, map[string]string{"log.retention.bytes": "9"}, false)))
	assert.Equal(t, map[string]string{"log.retention.bytes": "9"}, im.Configs(ClusterDefault), "replaced whole")
	assert.Equal(t, "5", before.Configs(ClusterDefault)["log.retention.ms"], "the image before is left as it was")
	im = im.Apply(5, new(SetConfigs(im, group, nil, false)))
	assert.Nil(t, im.Configs(group), "none left: gone")
	assert.Len(t, im.ConfigEntries(), 2)
}

// TestBrokerConfigPrecedence: a broker's own value wins over the cluster
// default, which applies to every broker without its own; neither leaves
// the static setting (ok false).
func TestBrokerConfigPrecedence(t *testing.T) {
	im := imageWith(t)
	im = im.Apply(3, &Record{Configs: []ResourceConfigs{
		{Resource: ClusterDefault, Configs: map[string]string{"log.retention.ms": "100", "message.max.bytes": "2000"}},
		{Resource: BrokerResource(1), Configs: map[string]string{"log.retention.ms": "50"}},
	}})
	for _, tc := range []struct {
		name      string
		broker    int32
		config    string
		value     string
		perBroker bool
		ok        bool
	}{
		{"the broker's own", 1, "log.retention.ms", "50", true, true},
		{"the default, the broker having none of it", 1, "message.max.bytes", "2000", false, true},
		{"the default, for another broker", 2, "log.retention.ms", "100", false, true},
		{"neither: static", 2, "min.insync.replicas", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, perBroker, ok := im.BrokerConfig(tc.broker, tc.config)
			assert.Equal(t, tc.value, v)
			assert.Equal(t, tc.perBroker, perBroker)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

// TestUncleanDefault: the cluster default's unclean.leader.election.enable
// replaces the controller's static one; a broker's own does not count.
func TestUncleanDefault(t *testing.T) {
	im := imageWith(t)
	assert.False(t, UncleanDefault(im, false))
	assert.True(t, UncleanDefault(im, true), "static")
	own := im.Apply(3, new(SetConfigs(im, BrokerResource(1), map[string]string{ConfigUncleanLeaderElection: "true"}, false)))
	assert.False(t, UncleanDefault(own, false), "a broker's own is not the cluster's")
	off := im.Apply(3, new(SetConfigs(im, ClusterDefault, map[string]string{ConfigUncleanLeaderElection: "FALSE"}, true)))
	assert.False(t, UncleanDefault(off, true), "the dynamic default over the static")
}

// TestSetConfigsElectsUncleanly: the cluster default of
// unclean.leader.election.enable turned on elects the offline partitions
// of the topics without their own false, in the same record; turned on
// when it was on already, or on a broker, it elects nothing.
func TestSetConfigsElectsUncleanly(t *testing.T) {
	offline := func(t *testing.T, configs map[string]string) *Image {
		im := imageShrunk(t, configs) // "u": replicas [1 2 3], ISR [1]
		im = im.Apply(5, new(Fence(im, 1, false)))
		require.True(t, partitionU(t, im).Offline())
		return im
	}
	on := map[string]string{ConfigUncleanLeaderElection: "true"}
	for _, tc := range []struct {
		name    string
		topic   map[string]string
		res     ConfigResource
		static  bool
		elected bool
	}{
		{"the default turned on", nil, ClusterDefault, false, true},
		{"the topic's own false wins", map[string]string{ConfigUncleanLeaderElection: "false"}, ClusterDefault, false, false},
		{"on already (static): nothing turned on", nil, ClusterDefault, true, false},
		{"a broker's own", nil, BrokerResource(2), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := offline(t, tc.topic)
			rec := SetConfigs(im, tc.res, on, tc.static)
			require.Len(t, rec.Configs, 1)
			p := partitionU(t, im.Apply(6, &rec))
			if tc.elected {
				assert.Equal(t, int32(2), p.Leader, "the first live replica, elected uncleanly")
				assert.Equal(t, []int32{2}, p.ISR)
			} else {
				assert.Empty(t, rec.Partitions)
			}
		})
	}
}

func TestCheckConfigResource(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  ConfigResource
		msg  string
	}{
		{"the cluster default", ClusterDefault, ""},
		{"a broker", BrokerResource(3), ""},
		{"a broker that is no id", ConfigResource{Type: ConfigResourceBroker, Name: "x"}, "Node id must be an integer, but it is: x"},
		{"a group", ConfigResource{Type: ConfigResourceGroup, Name: "g"}, ""},
		{"a group without a name", ConfigResource{Type: ConfigResourceGroup}, "Group name must not be empty"},
		{"another type", ConfigResource{Type: 8, Name: "1"}, "Unknown resource type 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckConfigResource(tc.res)
			if tc.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidRequest)
			assert.EqualError(t, err, tc.msg)
		})
	}
}
