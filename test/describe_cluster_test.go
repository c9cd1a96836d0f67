package test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// TestDescribeLogDirsKadm: kadm's DescribeAllLogDirs finds every broker's
// log dir of a cluster with log dirs, each holding its replicas of a
// topic on all three, with the size of what was produced.
func TestDescribeLogDirsKadm(t *testing.T) {
	dirs := make([]string, 3)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	c := newTestCluster(t, 3)
	for i := range dirs {
		c.cfgs[i].LogDirs = dirs[i]
		c.start(int32(i + 1))
	}
	cl := c.client(kgo.DefaultProduceTopic("sized"))
	c.createTopic(cl, "sized", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("some bytes")}).FirstErr())

	adm := kadm.NewClient(cl)
	require.Eventually(t, func() bool {
		all, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"sized": {0: {}}})
		if err != nil || len(all) != 3 {
			return false
		}
		for id, ds := range all {
			p, ok := ds.Lookup(dirs[id-1], "sized", 0)
			if !ok || p.Size == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every replica is in its broker's log dir, with the record")
}
