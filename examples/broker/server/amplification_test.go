package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// encodedSize returns the size of resp on the wire.
func encodedSize(resp kmsg.Response) int { return len(resp.AppendTo(nil)) }

// TestProduceResponseDoesNotAmplify: a produce naming an unknown topic
// with a 100 KiB name over 2,000 partitions is answered with the name
// once, not once per partition in an error message (the 1 MiB name
// made a 2.1 GB response).
func TestProduceResponseDoesNotAmplify(t *testing.T) {
	s := newTestServer(t)
	name := strings.Repeat("n", 100<<10)
	req := produceRequest(9, 1, name, 0, batchtest.Values(nowMs(), "x"))
	for p := int32(1); p < 2000; p++ {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: p})
	}
	reqSize := len(req.AppendTo(nil))
	resp := dialRaw(t, s).RoundTrip(req).(*kmsg.ProduceResponse)
	require.Len(t, resp.Topics[0].Partitions, 2000)
	for _, sp := range resp.Topics[0].Partitions {
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, sp.ErrorCode)
	}
	assert.NotNil(t, resp.Topics[0].Partitions[0].ErrorMessage, "the first partition says why")
	assert.LessOrEqual(t, len(*resp.Topics[0].Partitions[0].ErrorMessage), maxErrorMessage, "without the whole name")
	assert.Less(t, encodedSize(resp), 2*reqSize, "the response is no larger than the request, give or take")
}

// TestErrorMessagesAreBounded: what a message quotes of a request is cut,
// at a rune boundary, and said to be.
func TestErrorMessagesAreBounded(t *testing.T) {
	s := newTestServer(t)
	// 249 control characters: a name of the right length, quoted with
	// escapes (four bytes each) in the message.
	resp := dialRaw(t, s).RoundTrip(createTopicsRequest(7, newTopic(strings.Repeat("\x01", 249), 1, 1))).(*kmsg.CreateTopicsResponse)
	st := resp.Topics[0]
	assert.Equal(t, kerr.InvalidTopicException.Code, st.ErrorCode)
	require.NotNil(t, st.ErrorMessage)
	assert.Len(t, *st.ErrorMessage, maxErrorMessage)
	assert.True(t, strings.HasSuffix(*st.ErrorMessage, "..."))

	cut := truncate(strings.Repeat("é", 300), 100)
	assert.LessOrEqual(t, len(cut), 100)
	assert.Equal(t, strings.Repeat("é", 48)+"...", cut, "cut between runes")
}

// TestFetchResponseCappedByFetchMaxBytes: a fetch asking for 2^31-1 bytes
// gets at most fetch.max.bytes of records and one batch (Kafka's cap: the
// issue's such fetch built a 205 MB response); min_bytes is capped too.
func TestFetchResponseCappedByFetchMaxBytes(t *testing.T) {
	const fetchMax = 16 << 10
	s := newTestServer(t, func(c *Config) { c.FetchMaxBytes = fetchMax })
	topic := createTopic(t, s, "big", 2)
	value := strings.Repeat("v", 1000)
	for _, p := range topic.Partitions {
		for range 64 { // 64 KiB per partition
			appendValues(t, p, value)
		}
	}
	batch := len(batchtest.Values(nowMs(), value))
	req := fetchRequest(12, time.Minute, 1<<30, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0})
	req.MaxBytes = 1<<31 - 1
	for i := range req.Topics {
		req.Topics[i].Partitions[0].PartitionMaxBytes = 1<<31 - 1
	}
	start := time.Now()
	parts := fetched(t, dialRaw(t, s).RoundTrip(req))
	assert.Less(t, time.Since(start), 30*time.Second, "min_bytes capped to fetch.max.bytes: answered without waiting a minute")
	records := 0
	for _, sp := range parts {
		records += len(sp.RecordBatches)
	}
	assert.Greater(t, records, fetchMax-batch, "as much as fits")
	assert.LessOrEqual(t, records, fetchMax, "no more than fetch.max.bytes")

	// The one batch Kafka returns whatever its size: past the cap.
	huge := createTopic(t, s, "huge", 1)
	appendValues(t, huge.Partitions[0], strings.Repeat("h", 2*fetchMax))
	parts = fetched(t, dialRaw(t, s).RoundTrip(fetchRequest(12, 0, 1, fetchFrom{huge, 0, 0})))
	assert.Greater(t, len(parts[0].RecordBatches), fetchMax, "one batch, whatever its size")
	require.Eventually(t, func() bool { return s.net.QueuedBytes() == 0 }, 5*time.Second, time.Millisecond,
		"the records' memory is given back once written")
}

// TestFetchShrinksWhenMemoryIsSpent: a fetch answered while
// queued.max.request.bytes is spent holds only its one batch.
func TestFetchShrinksWhenMemoryIsSpent(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QueuedMaxRequestBytes = 64 << 10 })
	topic := createTopic(t, s, "f", 1)
	for range 8 {
		appendValues(t, topic.Partitions[0], strings.Repeat("v", 1000))
	}
	rec := s.net.NewRecorder()
	defer rec.Close()
	hold := rec.Request(kmsg.NewPtrApiVersionsRequest())
	require.Equal(t, 64<<10, hold.Room(64<<10)) // the budget spent
	parts := fetched(t, dialRaw(t, s).RoundTrip(fetchRequest(12, 0, 1, fetchFrom{topic, 0, 0})))
	assert.Len(t, values(t, parts[0]), 1, "one batch")
	hold.RespondHolding(kmsg.NewPtrApiVersionsResponse(), 0) // given back
	parts = fetched(t, dialRaw(t, s).RoundTrip(fetchRequest(12, 0, 1, fetchFrom{topic, 0, 0})))
	assert.Len(t, values(t, parts[0]), 8, "all of them once memory is back")
}
