package sharegroup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFullGroupRefusesNewMembers: a share group at group.share.max.size
// answers any member it does not have GROUP_MAX_SIZE_REACHED, with
// Kafka's message, whatever the epoch (Kafka's throwIfShareGroupIsFull
// comes before the member is looked up); its members go on, and once one
// leaves another joins.
func TestFullGroupRefusesNewMembers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSize = 2 })
	r1 := h.join(t, "m1", "a")
	h.join(t, "m2", "a")

	_, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m3", Topics: []string{"a"}})
	assert.ErrorIs(t, err, ErrGroupMaxSize)
	assert.ErrorContains(t, err, "The share group has reached its maximum capacity of 2 members.")
	_, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m3", Epoch: 1})
	assert.ErrorIs(t, err, ErrGroupMaxSize, "an unknown member at an epoch, too")

	_, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: r1.Epoch})
	assert.NoError(t, err, "a member heartbeats")
	_, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Epoch: -1})
	require.NoError(t, err)
	h.join(t, "m3", "a")
}

func TestDefaultMaxSize(t *testing.T) {
	h := newHarness(t)
	assert.Equal(t, DefaultMaxSize, h.c.cfg.MaxSize, "group.share.max.size's default, 200")
	_, err := New(Config{Timer: h.tm, Topic: func(string) (TopicInfo, bool) { return TopicInfo{}, false }, MaxSize: -1})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
