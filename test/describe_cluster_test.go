package test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeClusterFenced: on three brokers, DescribeCluster lists the
// three, and once one is stopped and fenced, the two others, or with
// include_fenced_brokers (v2) the three, the stopped one marked fenced.
func TestDescribeClusterFenced(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	describe := func(withFenced bool) map[int32]bool {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.EndpointType, req.IncludeFencedBrokers = 1, withFenced
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		require.NoError(t, err)
		require.Zero(t, resp.ErrorCode)
		out := make(map[int32]bool)
		for _, b := range resp.Brokers {
			out[b.NodeID] = b.IsFenced
		}
		return out
	}
	require.Eventually(t, func() bool { return len(describe(false)) == 3 }, 10*time.Second, 20*time.Millisecond)

	c.stop(3)
	require.Eventually(t, func() bool { return len(describe(false)) == 2 }, 10*time.Second, 20*time.Millisecond,
		"the stopped broker is fenced and left out")
	assert.Equal(t, map[int32]bool{1: false, 2: false, 3: true}, describe(true))
}
