package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// deleteRecordsRequest asks to delete, for each topic named, the records
// of partition 0 before offset, with a 5s timeout.
func deleteRecordsRequest(v int16, offset int64, topics ...string) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 5000
	for _, name := range topics {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// deleted returns the partitions of a DeleteRecords response, in order.
func deleted(t *testing.T, resp kmsg.Response) []kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	var out []kmsg.DeleteRecordsResponseTopicPartition
	for _, rt := range resp.(*kmsg.DeleteRecordsResponse).Topics {
		out = append(out, rt.Partitions...)
	}
	return out
}

// TestDeleteRecords: on a broker alone the answer is at once, with the
// low watermark at exactly the offset asked, inside a batch; fetches
// before it are out of range, a fetch inside the batch gets the batch
// whole and the new log start, and ListOffsets' earliest answers it.
func TestDeleteRecords(t *testing.T) {
	for _, v := range versions(0, 2) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			s := newTestServer(t)
			topic := createTopic(t, s, "d", 1)
			for range 4 {
				appendValues(t, topic.Partitions[0], "x", "y") // 0-1, 2-3, 4-5, 6-7
			}
			c := dialRaw(t, s)
			sp := deleted(t, c.RoundTrip(deleteRecordsRequest(v, 3, "d")))
			require.Len(t, sp, 1)
			assert.Zero(t, sp[0].ErrorCode, "%v", kerr.ErrorForCode(sp[0].ErrorCode))
			assert.Equal(t, int64(3), sp[0].LowWatermark, "exactly the offset, inside the batch 2-3")
			assert.Zero(t, s.replicas.Deletes().Pending(), "a broker alone answers at once")

			fp := fetched(t, c.RoundTrip(fetchRequest(11, 0, 1, fetchFrom{topic, 0, 2})))
			assert.Equal(t, kerr.OffsetOutOfRange.Code, fp[0].ErrorCode, "the records before it are gone")
			fp = fetched(t, c.RoundTrip(fetchRequest(11, 0, 1, fetchFrom{topic, 0, 3})))
			require.Zero(t, fp[0].ErrorCode)
			assert.Equal(t, int64(3), fp[0].LogStartOffset)
			assert.Equal(t, []string{"x", "y", "x", "y", "x", "y"}, values(t, fp[0]), "the batch holding it, whole, as Kafka serves it")
			lo := listed(t, c.RoundTrip(listOffsetsRequest(4, "d", 0, -2)))[0]
			assert.Equal(t, int64(3), lo.Offset, "earliest")

			sp = deleted(t, c.RoundTrip(deleteRecordsRequest(v, -1, "d")))
			assert.Zero(t, sp[0].ErrorCode)
			assert.Equal(t, int64(8), sp[0].LowWatermark, "-1: the high watermark")
		})
	}
}

func TestDeleteRecordsErrors(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "d", 1)
	appendValues(t, topic.Partitions[0], "x", "y")
	createTopic(t, s, "__consumer_offsets", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.ctrl().CreateTopic(ctx, controller.TopicSpec{Name: "compacted", Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{storage.ConfigCleanupPolicy: "compact"}})
	require.NoError(t, err)
	c := dialRaw(t, s)
	onePartition := deleteRecordsRequest(2, 0, "d")
	onePartition.Topics[0].Partitions[0].Partition = 1
	tests := []struct {
		name string
		req  *kmsg.DeleteRecordsRequest
		want *kerr.Error
	}{
		{"past the high watermark", deleteRecordsRequest(2, 3, "d"), kerr.OffsetOutOfRange},
		{"negative", deleteRecordsRequest(2, -2, "d"), kerr.OffsetOutOfRange},
		{"unknown topic", deleteRecordsRequest(2, 0, "nope"), kerr.UnknownTopicOrPartition},
		{"unknown partition", onePartition, kerr.UnknownTopicOrPartition},
		{"internal topic", deleteRecordsRequest(2, 0, "__consumer_offsets"), kerr.InvalidTopicException},
		{"cleanup.policy compact without delete", deleteRecordsRequest(2, 0, "compacted"), kerr.PolicyViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := deleted(t, c.RoundTrip(tt.req))
			require.Len(t, sp, 1)
			assert.Equal(t, tt.want.Code, sp[0].ErrorCode, "got %v", kerr.ErrorForCode(sp[0].ErrorCode))
			assert.Equal(t, int64(-1), sp[0].LowWatermark)
		})
	}
	o, err := topic.Partitions[0].Offsets()
	require.NoError(t, err)
	assert.Zero(t, o.LogStart, "nothing was deleted")
}

// TestDeleteRecordsNeedsDelete: DELETE on the topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions, whether it exists or
// not, and nothing is deleted.
func TestDeleteRecordsNeedsDelete(t *testing.T) {
	s := newAuthzServer(t)
	orders := createTopic(t, s, "orders", 1)
	secret := createTopic(t, s, "secret", 1)
	appendValues(t, orders.Partitions[0], "x", "y")
	appendValues(t, secret.Partitions[0], "x", "y")
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationDelete),
		allow(kmsg.ACLResourceTypeTopic, "secret", anonymous, kmsg.ACLOperationRead))
	sp := deleted(t, dialRaw(t, s).RoundTrip(deleteRecordsRequest(1, 1, "orders", "secret", "nowhere")))
	require.Len(t, sp, 3)
	assert.Zero(t, sp[0].ErrorCode)
	assert.Equal(t, int64(1), sp[0].LowWatermark)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, sp[1].ErrorCode, "READ is not DELETE")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, sp[2].ErrorCode, "whether it exists or not")
	o, err := secret.Partitions[0].Offsets()
	require.NoError(t, err)
	assert.Zero(t, o.LogStart)
}

// TestDeleteRecordsSurvivesRestart: with log.dirs, the log start a
// DeleteRecords set inside a batch is where the partition starts after a
// restart.
func TestDeleteRecordsSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	withDir := func(c *Config) { c.LogDirs = dir }
	s := newTestServer(t, withDir)
	topic := createTopic(t, s, "d", 1)
	for range 3 {
		appendValues(t, topic.Partitions[0], "x", "y")
	}
	sp := deleted(t, dialRaw(t, s).RoundTrip(deleteRecordsRequest(2, 3, "d")))
	require.Zero(t, sp[0].ErrorCode)
	require.NoError(t, s.Close(context.Background()))

	s = newTestServer(t, withDir)
	lo := listed(t, dialRaw(t, s).RoundTrip(listOffsetsRequest(4, "d", 0, -2)))[0]
	assert.Equal(t, int64(3), lo.Offset, "earliest, after the restart")
}
