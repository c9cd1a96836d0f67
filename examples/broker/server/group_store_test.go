package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// newOffsetsServer is a group server whose offsets topic has one
// partition, created and loaded by a first commit to group "g", offsets 1
// and 2; it returns the partition.
func newOffsetsServer(t *testing.T, tweak ...func(*Config)) (*Server, *rawConn, *storage.Partition) {
	t.Helper()
	s := newTestServer(t, append([]func(*Config){func(c *Config) {
		c.GroupInitialRebalance, c.OffsetsTopicPartitions = 0, 1
	}}, tweak...)...)
	createTopic(t, s, "orders", 3)
	c := dialRaw(t, s)
	resp := c.RoundTrip(commitReq(8, "g", "", -1, 1)).(*kmsg.OffsetCommitResponse)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	p, err := s.data.store.Partition(offsetsTopic, 0)
	require.NoError(t, err)
	return s, c, p
}

func commitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, p := range resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
		out = append(out, p.ErrorCode)
	}
	return out
}

// TestOffsetCommitWaitsForTheHighWatermark: a commit is a record of the
// group's offsets partition, answered once the high watermark passes it
// (as an acks=all produce), and visible to OffsetFetch only then.
func TestOffsetCommitWaitsForTheHighWatermark(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	p.SetHighWatermarkManaged(true) // as with followers: the append alone does not move it
	tc := newTestConn(t, s)
	r := tc.request(commitReq(8, "g", "", -1, 10))
	s.handleOffsetCommit(r)
	_, answered := tc.answer(r)
	require.False(t, answered, "waits for the high watermark")
	assert.Equal(t, 1, s.replicas.Produces().Delayed(), "in the Produce purgatory")
	assert.Equal(t, []int64{1, 2}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "pending: not visible")

	o, err := p.Offsets()
	require.NoError(t, err)
	require.Less(t, o.HighWatermark, o.LogEnd, "the commit's record is appended")
	p.AdvanceHighWatermark(o.LogEnd) // the followers have it
	s.replicas.Wake(p)
	assert.Equal(t, []int16{0, 0}, commitCodes(tc.await(r)))
	assert.Equal(t, []int64{10, 11}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
}

// TestOffsetCommitTimesOut: a commit whose record is not replicated within
// offsets.commit.timeout.ms is answered COORDINATOR_NOT_AVAILABLE, as
// Kafka 4's group coordinator answers a write that timed out (clients
// retry it), and the committed offsets stay as they were.
func TestOffsetCommitTimesOut(t *testing.T) {
	s, c, p := newOffsetsServer(t, func(c *Config) { c.OffsetsCommitTimeout = 50 * time.Millisecond })
	p.SetHighWatermarkManaged(true)
	tc := newTestConn(t, s)
	r := tc.request(commitReq(8, "g", "", -1, 10))
	s.handleOffsetCommit(r)
	_, answered := tc.answer(r)
	require.False(t, answered)
	assert.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code}, commitCodes(tc.await(r)))
	assert.Equal(t, []int64{1, 2}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "not committed")
}

// TestOffsetsPartitionLoadsAgain: the groups of an offsets partition come
// back from its records when it is loaded again (as on a new leader):
// each Empty, with its offsets; deleted offsets and groups stay deleted.
// The records are Kafka's.
func TestOffsetsPartitionLoadsAgain(t *testing.T) {
	s, c, p := newOffsetsServer(t)
	require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, 5))))
	require.Equal(t, []int16{0, 0}, commitCodes(c.RoundTrip(commitReq(8, "gone", "", -1, 9))))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"gone"}
	require.Equal(t, int16(0), c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)

	reloadOffsets(t, s, func() {
		assert.Equal(t, kerr.CoordinatorLoadInProgress, s.offsets.KeyError("g"), "led here, not loaded")
		_, found, _ := s.groups.DescribeGroup("g")
		require.False(t, found)
	})
	assert.Equal(t, []int64{5, 6}, fetchOffsets(t, c, 8, "g", "orders", 0, 1), "the offsets are back")
	assert.Equal(t, []int64{-1, -1}, fetchOffsets(t, c, 8, "gone", "orders", 0, 1), "the deleted group stays deleted")

	// The partition holds __consumer_offsets' own records.
	o, err := p.Offsets()
	require.NoError(t, err)
	res, err := p.Read(o.LogStart, storage.ReadReplica, 1<<20, true)
	require.NoError(t, err)
	var replay records.Replay
	next, err := replay.Apply(res.Records)
	require.NoError(t, err)
	assert.Equal(t, o.LogEnd, next)
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(res.Records))
	length, n := kbin.Varint(b.Records)
	var first kmsg.Record
	require.NoError(t, first.ReadFrom(b.Records[:n+int(length)]))
	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(first.Key))
	assert.Equal(t, int16(1), k.Version)
	assert.Equal(t, "g", k.Group, "a simple consumer's commit is its offsets' records alone: the group has no metadata")
}

// TestOffsetCommitBelowMinISR: a commit to an offsets partition whose ISR
// is below min.insync.replicas is refused COORDINATOR_NOT_AVAILABLE, as
// Kafka maps its NOT_ENOUGH_REPLICAS, and nothing is appended.
func TestOffsetCommitBelowMinISR(t *testing.T) {
	s := newTestServer(t, func(c *Config) {
		c.GroupInitialRebalance, c.OffsetsTopicPartitions, c.MinInsyncReplicas = 0, 1, 2 // one replica, never enough
	})
	createTopic(t, s, "orders", 3)
	c := dialRaw(t, s)
	code := kerr.CoordinatorNotAvailable.Code
	assert.Equal(t, []int16{code, code}, commitCodes(c.RoundTrip(commitReq(8, "g", "", -1, 1))))
	p, err := s.data.store.Partition(offsetsTopic, 0)
	require.NoError(t, err)
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.LogEnd, "nothing appended")
	assert.Equal(t, []int64{-1, -1}, fetchOffsets(t, c, 8, "g", "orders", 0, 1))
}
