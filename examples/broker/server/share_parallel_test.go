package server

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// heldWrites is a share.Persister whose writes wait until release: the
// share coordinator answering slowly.
type heldWrites struct {
	share.Persister
	mu   sync.Mutex
	held []func()
	hold bool
}

func (h *heldWrites) Write(k share.Key, leaderEpoch int32, snap share.Snapshot, done func(error)) {
	h.mu.Lock()
	if h.hold {
		h.held = append(h.held, func() { h.Persister.Write(k, leaderEpoch, snap, done) })
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	h.Persister.Write(k, leaderEpoch, snap, done)
}

// start holds the writes from now on.
func (h *heldWrites) start() {
	h.mu.Lock()
	h.hold = true
	h.mu.Unlock()
}

// release lets the held writes go on, and those to come.
func (h *heldWrites) release() {
	h.mu.Lock()
	held := h.held
	h.held, h.hold = nil, false
	h.mu.Unlock()
	for _, w := range held {
		w()
	}
}

// TestShareFetchAcquiresWhileItsAcknowledgementsAreWritten: a share fetch
// carrying acknowledgements acquires its records while the
// acknowledgements' new state is being written at the share coordinator,
// as Kafka's KafkaApis runs the two side by side, and answers once both
// are done. Acquiring only after the write kept a record produced meanwhile
// waiting for the coordinator, on every fetch of a consumer that acks.
func TestShareFetchAcquiresWhileItsAcknowledgementsAreWritten(t *testing.T) {
	s, held, topicID, tc := heldWritesServer(t, "share-parallel")
	tc.await(tc.serve(s, produceRequest(9, 1, "share-parallel", 0, batchtest.Values(nowMs(), "v1"))))
	held.start()
	r := tc.serve(s, shareFetchReq(topicID, "a", 1, 30000,
		kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}))
	sp := s.share.parts.Get(share.Key{Group: "g", Topic: topicID, Partition: 0})
	require.NotNil(t, sp)
	st, deliveries := sp.StateOf(1)
	assert.Equal(t, share.Acquired, st, "record 1 acquired while the acknowledgement of 0 is written")
	assert.Equal(t, int16(1), deliveries)
	_, answered := tc.answer(r)
	require.False(t, answered, "no answer before the acknowledgement is durable")

	held.release()
	got := acquired(t, tc.await(r))
	assert.Zero(t, got.AcknowledgeErrorCode)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 1, LastOffset: 1, DeliveryCount: 1}},
		got.AcquiredRecords)
}

// TestShareFetchAcknowledgementsDurableWhileItIsTried: the write of a
// waiting share fetch's acknowledgements ends on one goroutine while an
// append tries the fetch on another. The write's codes must not be kept
// where a try reads (the race detector saw a try copying a partition
// whose acknowledgement code the write's answer was setting).
func TestShareFetchAcknowledgementsDurableWhileItIsTried(t *testing.T) {
	s, held, topicID, tc := heldWritesServer(t, "share-race")
	held.start()
	r := tc.serve(s, shareFetchReq(topicID, "a", 1, 30000,
		kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}))
	_, answered := tc.answer(r)
	require.False(t, answered, "nothing to acquire yet: the fetch waits")

	var wg sync.WaitGroup
	wg.Go(held.release)
	pc := newTestConn(t, s)
	pc.await(pc.serve(s, produceRequest(9, 1, "share-race", 0, batchtest.Values(nowMs(), "v1"))))
	wg.Wait()
	got := acquired(t, tc.await(r))
	assert.Zero(t, got.AcknowledgeErrorCode)
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 1, LastOffset: 1, DeliveryCount: 1}},
		got.AcquiredRecords)
}

// heldWritesServer is a test server whose share-state writes go through
// held (holding none yet), with topic's record 0 acquired by member "a"
// of group "g" (earliest), and a connection to it.
func heldWritesServer(t *testing.T, topic string) (*Server, *heldWrites, storage.TopicID, *testConn) {
	t.Helper()
	s := newTestServer(t)
	held := &heldWrites{Persister: s.share.persister}
	var err error
	s.share.parts, err = share.NewManager(share.Config{Timer: s.share.timer, Wake: s.share.wakeShare, Persister: held})
	require.NoError(t, err)
	tp := createTopic(t, s, topic, 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, groupConfigReq("g", cfgShareAutoOffsetReset, "earliest")))
	tc.await(tc.serve(s, produceRequest(9, 1, topic, 0, batchtest.Values(nowMs(), "v0"))))
	require.Len(t, acquired(t, tc.await(tc.serve(s, shareFetchReq(tp.ID, "a", 0, 0)))).AcquiredRecords, 1)
	return s, held, tp.ID, tc
}
