package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Once its members have left and it is deleted, nothing of a group waits
// in any purgatory.
func TestNothingWaitsForAGroupThatIsGone(t *testing.T) {
	c, clk := newTestCoordinator(t)
	res := stableGroup(t, c, clk, "g", 3)
	sizes := c.PurgatorySizes()
	assert.Equal(t, 3, sizes["Heartbeat"].Pending, "a session per member")
	assert.Zero(t, sizes["Rebalance"].Pending, "the rebalance and the syncs are done")
	assert.Zero(t, sizes["OffsetExpiration"].Pending, "not Empty")

	var leaving []MemberIdentity
	for _, r := range res {
		leaving = append(leaving, MemberIdentity{MemberID: r.MemberID})
	}
	_, errs := c.LeaveGroup("g", leaving)
	require.Equal(t, []*kerr.Error{nil, nil, nil}, errs)
	sizes = c.PurgatorySizes()
	assert.Zero(t, sizes["Heartbeat"].Pending)
	assert.Zero(t, sizes["Rebalance"].Pending)
	assert.Equal(t, 1, sizes["OffsetExpiration"].Pending, "the Empty group's expiration")

	require.Equal(t, []*kerr.Error{nil}, c.DeleteGroups([]string{"g"}))
	for name, size := range c.PurgatorySizes() {
		assert.Zero(t, size.Pending, name)
	}
	// Completed operations leave the watcher lists within one purge (the
	// reaper's, once nothing waits).
	c.rebalance.Purge()
	c.sessions.Purge()
	c.expiry.Purge()
	for name, size := range c.PurgatorySizes() {
		assert.Zero(t, size.Watched, "%s: nothing left on the lists after a purge", name)
	}
}
