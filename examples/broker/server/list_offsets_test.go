package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

func listOffsetsRequest(v int16, topic string, partition int32, timestamps ...int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(v)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, ts := range timestamps {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	return req
}

func listed(t *testing.T, resp kmsg.Response) []kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	lr := resp.(*kmsg.ListOffsetsResponse)
	require.Len(t, lr.Topics, 1)
	return lr.Topics[0].Partitions
}

func TestListOffsets(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.LogRetentionBytes = int64(2 * len(batchtest.Values(1, "x", "y"))) })
	topic := createTopic(t, s, "l", 1)
	base := time.Now().UnixMilli()
	// Batches at offsets 0-1 (ts base), 2-3 (base+300), 4-5 (base+100),
	// 6-7 (base+200); retention.bytes keeps the last two.
	for _, ts := range []int64{base, base + 300, base + 100, base + 200} {
		_, err := topic.Partitions[0].Append(batchtest.Values(ts, "x", "y"))
		require.NoError(t, err)
	}
	c := dialRaw(t, s)
	type want struct {
		offset, timestamp int64
	}
	tests := []struct {
		name string
		ts   int64
		want want
	}{
		{"earliest", -2, want{4, -1}},
		{"latest", -1, want{8, -1}},
		{"max timestamp of what is kept", -3, want{7, base + 200}},
		{"earliest local", -4, want{4, -1}},
		{"latest tiered: none", -5, want{-1, -1}},
		{"by timestamp, before everything", 0, want{4, base + 100}},
		{"by timestamp, exactly", base + 200, want{6, base + 200}},
		{"by timestamp, between", base + 150, want{6, base + 200}},
		{"by timestamp, after everything", base + 201, want{-1, -1}},
	}
	for _, v := range versions(1, 11) {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d %s", v, tt.name), func(t *testing.T) {
				sp := listed(t, c.RoundTrip(listOffsetsRequest(v, "l", 0, tt.ts)))[0]
				require.Equal(t, int16(0), sp.ErrorCode, "%v", kerr.ErrorForCode(sp.ErrorCode))
				assert.Equal(t, tt.want.offset, sp.Offset)
				assert.Equal(t, tt.want.timestamp, sp.Timestamp)
				if v >= 4 {
					wantEpoch := int32(0)
					if tt.want.offset < 0 {
						wantEpoch = -1
					}
					assert.Equal(t, wantEpoch, sp.LeaderEpoch)
				}
			})
		}
	}
}

func TestListOffsetsEmptyPartition(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "l", 1)
	c := dialRaw(t, s)
	for ts, want := range map[int64]int64{-2: 0, -1: 0, -3: -1, 12345: -1} {
		sp := listed(t, c.RoundTrip(listOffsetsRequest(7, "l", 0, ts)))[0]
		assert.Equal(t, int16(0), sp.ErrorCode)
		assert.Equal(t, want, sp.Offset, "timestamp %d", ts)
	}
}

func TestListOffsetsErrors(t *testing.T) {
	s := newTestServer(t)
	createTopic(t, s, "l", 1)
	c := dialRaw(t, s)
	withEpoch := listOffsetsRequest(4, "l", 0, -1)
	withEpoch.Topics[0].Partitions[0].CurrentLeaderEpoch = 3
	badIsolation := listOffsetsRequest(4, "l", 0, -1)
	badIsolation.IsolationLevel = 5
	tests := []struct {
		name string
		req  *kmsg.ListOffsetsRequest
		want *kerr.Error
	}{
		{"unknown topic", listOffsetsRequest(4, "nope", 0, -1), kerr.UnknownTopicOrPartition},
		{"unknown partition", listOffsetsRequest(4, "l", 1, -1), kerr.UnknownTopicOrPartition},
		{"partition listed twice", listOffsetsRequest(4, "l", 0, -1, -2), kerr.InvalidRequest},
		{"leader epoch from the future", withEpoch, kerr.UnknownLeaderEpoch},
		{"unknown isolation", badIsolation, kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sp := range listed(t, c.RoundTrip(tt.req)) {
				assert.Equal(t, tt.want.Code, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
				assert.Equal(t, int64(-1), sp.Offset)
			}
		})
	}
}

func TestListOffsetsLatestForAReplica(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "l", 1)
	appendValues(t, topic.Partitions[0], "a", "b")
	req := listOffsetsRequest(4, "l", 0, -1)
	req.ReplicaID = -2 // a debug tool
	sp := listed(t, dialRaw(t, s).RoundTrip(req))[0]
	assert.Equal(t, int64(2), sp.Offset, "the log end")
}
