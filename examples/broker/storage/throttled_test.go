package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThrottledReplicasConfig: leader.replication.throttled.replicas and
// follower.replication.throttled.replicas take what Kafka's
// ThrottledReplicaListValidator takes (the literal '*', or a list of
// partition:broker, empty entries only at its end) and refuse the rest,
// and each names the partitions a broker throttles as Kafka's
// TopicConfigHandler reads it: the entries naming that broker.
func TestThrottledReplicasConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
		want        ThrottledReplicas
	}{
		{"empty", "", true, ""},
		{"wildcard", " * ", true, "*"},
		{"list", "0:101, 0:102 ,1:101", true, "0:101,0:102,1:101"},
		{"trailing comma", "0:101,", true, "0:101"},
		{"empty inside", "0:101,,1:102", false, ""},
		{"wildcard in a list", "*,0:1", false, ""},
		{"no broker", "0", false, ""},
		{"negative", "-1:2", false, ""},
		{"past int32", "0:2147483648", false, ""},
		{"words", "a:b", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{ConfigLeaderThrottledReplicas, ConfigFollowerThrottledReplicas} {
				v := tc.value
				c, err := DefaultTopicConfig().With(name, &v)
				if !tc.ok {
					assert.ErrorIs(t, err, ErrInvalidConfig, "%s=%q", name, tc.value)
					continue
				}
				require.NoError(t, err, "%s=%q", name, tc.value)
				got := c.LeaderThrottled
				if name == ConfigFollowerThrottledReplicas {
					got = c.FollowerThrottled
				}
				assert.Equal(t, tc.want, got, "%s=%q is kept normalized", name, tc.value)
				var listed string
				for _, cv := range c.Values() {
					if cv.Name == name {
						listed = cv.Value
					}
				}
				assert.Equal(t, string(tc.want), listed, "Values lists %s", name)
			}
		})
	}

	list := ThrottledReplicas("0:101,0:102,1:101,1:102")
	assert.True(t, list.Names(0, 102), "partition 0 on broker 102")
	assert.True(t, list.Names(1, 101))
	assert.False(t, list.Names(2, 101), "a partition not listed")
	assert.False(t, list.Names(0, 103), "a broker not listed throttles nothing")
	assert.True(t, ThrottledReplicas("*").Names(7, 9), "'*' throttles every replica")
	assert.False(t, ThrottledReplicas("").Names(0, 0), "empty throttles nothing")

	def := DefaultTopicConfig()
	assert.Equal(t, ThrottledReplicas(""), def.LeaderThrottled, "Kafka's default: none")
	c, err := def.With(ConfigLeaderThrottledReplicas, nil)
	require.NoError(t, err)
	assert.Equal(t, def, c, "a null value keeps the default")
}
