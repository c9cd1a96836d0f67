package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func describeLogDirs(c *rawConn, v int16, topics map[string][]int32) *kmsg.DescribeLogDirsResponse {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(v)
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		for name, ps := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeLogDirsRequestTopic{Topic: name, Partitions: ps})
		}
	}
	return c.RoundTrip(req).(*kmsg.DescribeLogDirsResponse)
}

// sizes flattens a log dir's answer to topic/partition sizes.
func sizes(dir kmsg.DescribeLogDirsResponseDir) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64)
	for _, dt := range dir.Topics {
		out[dt.Topic] = make(map[int32]int64)
		for _, p := range dt.Partitions {
			out[dt.Topic][p.Partition] = p.Size
		}
	}
	return out
}

// TestDescribeLogDirs: the log dir, with each partition's size (the bytes
// of its batches), every partition or those asked for, at every version;
// the file system's sizes from v4.
func TestDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, func(c *Config) { c.LogDirs = dir })
	createTopic(t, s, "a", 2)
	createTopic(t, s, "b", 1)
	c := dialRaw(t, s)
	batch := batchtest.Values(time.Now().UnixMilli(), "x", "y")
	require.Zero(t, produced(t, c.RoundTrip(produceRequest(9, -1, "a", 1, batch))).ErrorCode)

	for _, v := range versions(0, 5) {
		resp := describeLogDirs(c, v, nil)
		require.Zero(t, resp.ErrorCode, "v%d", v)
		require.Len(t, resp.Dirs, 1, "v%d", v)
		d := resp.Dirs[0]
		assert.Zero(t, d.ErrorCode)
		assert.Equal(t, dir, d.Dir)
		assert.Equal(t, map[string]map[int32]int64{"a": {0: 0, 1: int64(len(batch))}, "b": {0: 0}}, sizes(d), "v%d", v)
		if v >= 4 {
			assert.Positive(t, d.TotalBytes)
			assert.Positive(t, d.UsableBytes)
			assert.LessOrEqual(t, d.UsableBytes, d.TotalBytes)
		}
	}
	resp := describeLogDirs(c, 4, map[string][]int32{"a": {1, 7}, "missing": {0}})
	assert.Equal(t, map[string]map[int32]int64{"a": {1: int64(len(batch))}}, sizes(resp.Dirs[0]),
		"what was asked for and held, nothing else")
}

// TestDescribeLogDirsInMemory: a broker without a log dir answers none.
func TestDescribeLogDirsInMemory(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "a", 1)
	resp := describeLogDirs(dialRaw(t, s), 4, nil)
	assert.Zero(t, resp.ErrorCode)
	assert.Empty(t, resp.Dirs)
}

// TestDescribeLogDirsNeedsTheCluster: without DESCRIBE on the cluster, no
// log dir, and from v3 CLUSTER_AUTHORIZATION_FAILED.
func TestDescribeLogDirsNeedsTheCluster(t *testing.T) {
	dir := t.TempDir()
	s := newAuthzServer(t, func(c *Config) { c.LogDirs = dir })
	c := dialRaw(t, s)
	resp := describeLogDirs(c, 4, nil)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.ErrorCode)
	assert.Empty(t, resp.Dirs)
	resp = describeLogDirs(c, 2, nil)
	assert.Empty(t, resp.Dirs)

	grant(t, s, allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", anonymous, kmsg.ACLOperationDescribe))
	resp = describeLogDirs(c, 4, nil)
	assert.Zero(t, resp.ErrorCode)
	assert.Len(t, resp.Dirs, 1)
}
