package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitTooLargeToStore: a commit whose record batch is larger
// than the offsets topic takes (here 400 partitions with 4,000 bytes of
// metadata each, 1.6 MB against message.max.bytes' 1 MiB) is answered
// INVALID_COMMIT_OFFSET_SIZE, as Kafka maps its append's MESSAGE_TOO_LARGE
// for a commit: a client retries NOT_COORDINATOR for ever. A commit that
// fits is stored as usual after it.
func TestOffsetCommitTooLargeToStore(t *testing.T) {
	srv := startBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "wide", 400)
	commit := func(partitions int32, metadata string) []int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "too-large", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "wide"
		for p := range partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = p, 7, kmsg.StringPtr(metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		var codes []int16
		for _, p := range resp.Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	for _, code := range commit(400, strings.Repeat("m", 4000)) {
		require.Equal(t, kerr.InvalidCommitOffsetSize.Code, code, "%v", kerr.ErrorForCode(code))
	}
	for _, code := range commit(2, "small") {
		assert.Zero(t, code, "%v", kerr.ErrorForCode(code))
	}
}
