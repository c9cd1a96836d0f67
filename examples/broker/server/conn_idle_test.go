package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdleTimeoutSparesWaitingClients: a connection that owes an answer is
// not idle, however long the answer takes (a JoinGroup through a long
// rebalance); once nothing is owed, connections.max.idle.ms applies.
func TestIdleTimeoutSparesWaitingClients(t *testing.T) {
	s := newTestServer(t, func(c *Config) {
		c.ConnectionsMaxIdle = 300 * time.Millisecond
		c.GroupInitialRebalance = time.Second // the join waits this long
	})
	c := dialRaw(t, s)
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(9)
	join.Group, join.MemberID, join.ProtocolType = "idle", "", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	resp := c.RoundTrip(join).(*kmsg.JoinGroupResponse) // MEMBER_ID_REQUIRED
	join.MemberID = resp.MemberID
	start := time.Now()
	resp = c.RoundTrip(join).(*kmsg.JoinGroupResponse) // waits out the initial delay
	assert.Equal(t, int16(0), resp.ErrorCode)
	assert.Greater(t, time.Since(start), 600*time.Millisecond, "the join waited longer than the idle limit")
	assert.True(t, c.ClosedByPeer(), "then, owing nothing, it idles out")
}
