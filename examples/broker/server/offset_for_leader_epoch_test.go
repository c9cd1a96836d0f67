package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// epochQuery is one partition of an OffsetForLeaderEpoch request.
type epochQuery struct {
	partition, current, epoch int32
}

func offsetForLeaderEpochRequest(v int16, topic string, qs ...epochQuery) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(v)
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	for _, q := range qs {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = q.partition, q.current, q.epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestOffsetForLeaderEpoch: a leader answers where each epoch ends in its
// log, as Kafka's endOffsetFor, after checking current_leader_epoch.
func TestOffsetForLeaderEpoch(t *testing.T) {
	s := newTestServer(t)
	p := createTopic(t, s, "e", 1).Partitions[0]
	_, err := p.Append(batchtest.Values(nowMs(), "a", "b")) // 0-1 at epoch 0
	require.NoError(t, err)
	p.SetLeaderEpoch(2)                               // as if the metadata log had moved leadership twice
	_, err = p.Append(batchtest.Values(nowMs(), "c")) // 2 at epoch 2
	require.NoError(t, err)
	p.SetLeaderEpoch(3)                        // and once more, with nothing appended yet,
	require.NoError(t, p.AssignLeaderEpoch(3)) // recorded at the log end, as applied does for a new leader

	c := dialRaw(t, s)
	tests := []struct {
		name       string
		q          epochQuery
		code       int16
		epoch      int32
		endOffset  int64
		topic      string
		minVersion int16
	}{
		{name: "the first epoch ends where the second starts", q: epochQuery{0, -1, 0}, epoch: 0, endOffset: 2},
		{name: "an epoch the log skipped: the one below", q: epochQuery{0, 3, 1}, epoch: 0, endOffset: 2},
		{name: "an epoch ends where the leader's current one starts", q: epochQuery{0, 3, 2}, epoch: 2, endOffset: 3},
		{name: "the current epoch ends at the log end", q: epochQuery{0, 3, 3}, epoch: 3, endOffset: 3},
		{name: "a newer epoch than any", q: epochQuery{0, -1, 7}, epoch: -1, endOffset: -1},
		{name: "an older current epoch is fenced", q: epochQuery{0, 2, 0}, code: kerr.FencedLeaderEpoch.Code, epoch: -1, endOffset: -1, minVersion: 2},
		{name: "a newer current epoch is unknown", q: epochQuery{0, 4, 0}, code: kerr.UnknownLeaderEpoch.Code, epoch: -1, endOffset: -1, minVersion: 2},
		{name: "an unknown partition", q: epochQuery{5, -1, 0}, code: kerr.UnknownTopicOrPartition.Code, epoch: -1, endOffset: -1},
		{name: "an unknown topic", topic: "missing", q: epochQuery{0, -1, 0}, code: kerr.UnknownTopicOrPartition.Code, epoch: -1, endOffset: -1},
	}
	for _, tt := range tests {
		for v := max(tt.minVersion, 0); v <= 4; v++ {
			topic := tt.topic
			if topic == "" {
				topic = "e"
			}
			resp := c.RoundTrip(offsetForLeaderEpochRequest(v, topic, tt.q)).(*kmsg.OffsetForLeaderEpochResponse)
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			sp := resp.Topics[0].Partitions[0]
			assert.Equal(t, tt.code, sp.ErrorCode, "%s, v%d", tt.name, v)
			assert.Equal(t, tt.endOffset, sp.EndOffset, "%s, v%d", tt.name, v)
			if v >= 1 { // v0 carries no leader epoch back
				assert.Equal(t, tt.epoch, sp.LeaderEpoch, "%s, v%d", tt.name, v)
			}
		}
	}
	assert.Equal(t, []int32{0, 2, 3}, epochsOf(p), "answering recorded the leader's current epoch at its log end")

	var advertised *kmsg.ApiVersionsResponseApiKey
	for _, k := range apiKeysResponse().ApiKeys {
		if k.ApiKey == int16(kmsg.OffsetForLeaderEpoch) {
			advertised = &k
		}
	}
	require.NotNil(t, advertised, "ApiVersions lists OffsetForLeaderEpoch")
	assert.Equal(t, []int16{0, 4}, []int16{advertised.MinVersion, advertised.MaxVersion})
}

func epochsOf(p *storage.Partition) []int32 {
	var out []int32
	for _, e := range p.LeaderEpochs() {
		out = append(out, e.Epoch)
	}
	return out
}
