package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestConvertToConsumer: a Stable group's members are handed over with
// their generation, protocols and assignments; the group is left Empty,
// and a member's next heartbeat no longer finds it here. A refusal of
// the conversion leaves the group as it was; a group of another protocol
// type is not handed over.
func TestConvertToConsumer(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 2)

	found, err := c.ConvertToConsumer("g", "consumer", func(Conversion) *kerr.Error { return kerr.CoordinatorNotAvailable })
	assert.True(t, found)
	assert.Equal(t, kerr.CoordinatorNotAvailable, err, "the adopter's refusal")
	st, members := state(t, c, "g")
	assert.Equal(t, Stable, st, "a refused conversion changes nothing")
	assert.Len(t, members, 2)

	found, err = c.ConvertToConsumer("g", "connect", func(Conversion) *kerr.Error { t.Fatal("adopted"); return nil })
	assert.True(t, found)
	assert.Equal(t, kerr.InconsistentGroupProtocol, err, "another protocol type")

	var got Conversion
	found, err = c.ConvertToConsumer("g", "consumer", func(cv Conversion) *kerr.Error { got = cv; return nil })
	require.True(t, found)
	require.Nil(t, err)
	assert.Equal(t, int32(1), got.Generation)
	assert.Equal(t, "range", got.Protocol)
	require.Len(t, got.Members, 2)
	for i, m := range got.Members {
		assert.Equal(t, res[i].MemberID, m.MemberID, "in join order")
		assert.Equal(t, assignment(m.MemberID), m.Assignment, "with its assignment")
		assert.NotEmpty(t, m.Protocols)
		assert.Positive(t, m.SessionTimeout)
	}
	st, members = state(t, c, "g")
	assert.Equal(t, Empty, st, "the group stays, Empty, with its offsets")
	assert.Empty(t, members)
	assert.Equal(t, kerr.UnknownMemberID, heartbeat(c, "g", res[0]))

	found, err = c.ConvertToConsumer("g", "consumer", func(Conversion) *kerr.Error { t.Fatal("adopted"); return nil })
	assert.False(t, found, "no members: nothing to convert")
	assert.Nil(t, err)
}
