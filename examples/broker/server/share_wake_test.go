package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestShareWakeHookWaitsForAShareFetch checks that appends cost the share
// purgatory nothing until a share fetch waits: the partition wake hook is
// not installed by produces, and is by the first share fetch that parks,
// which the next append then wakes.
func TestShareWakeHookWaitsForAShareFetch(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "share-hook", 1)
	tc := newTestConn(t, s)
	tc.await(tc.serve(s, produceRequest(9, 1, "share-hook", 0, batchtest.Values(nowMs(), "v"))))
	assert.False(t, s.share.waking.Load(), "a produce with no share fetch installs no wake hook")

	r := tc.serve(s, shareFetchReq(topic.ID, "m", 0, 30000))
	_, answered := tc.answer(r)
	require.False(t, answered, "latest: nothing to acquire, the fetch waits")
	assert.True(t, s.share.waking.Load(), "the waiting fetch installed the hook")

	tc.await(tc.serve(s, produceRequest(9, 1, "share-hook", 0, batchtest.Values(nowMs(), "w"))))
	part := acquired(t, tc.await(r))
	assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 1, LastOffset: 1, DeliveryCount: 1}},
		part.AcquiredRecords, "the append after the hook woke the fetch")
}

// TestShareWakeHookRace races the first share fetch of a broker, which
// installs the wake hook as it parks, with an append: whichever comes
// first, the fetch is answered with the record (acquired at once, or
// woken by the append), never left to its max wait. Each round is a new
// broker, so each races the hook's installation itself.
func TestShareWakeHookRace(t *testing.T) {
	for round := range 8 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			s := newTestServer(t)
			topic := createTopic(t, s, "share-race", 1)
			fetcher, producer := newTestConn(t, s), newTestConn(t, s)
			// Open the session and the window (latest: offset 0) before
			// the race; this fetch waits, installing nothing yet...
			first := fetcher.serve(s, shareFetchReq(topic.ID, "m", 0, 0))
			acquiredNone(t, fetcher.await(first))
			s.share.waking.Store(false) // ...and take the hook away again.
			s.replicas.OnWake(nil)

			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				producer.await(producer.serve(s, produceRequest(9, 1, "share-race", 0, batchtest.Values(nowMs(), "v"))))
			}()
			r := fetcher.serve(s, shareFetchReq(topic.ID, "m", 1, 30000))
			wg.Wait()
			part := acquired(t, fetcher.await(r))
			assert.Equal(t, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 0, DeliveryCount: 1}},
				part.AcquiredRecords, "round %d: the record reached the fetch", round)
		})
	}
}

// acquiredNone checks that a share fetch's answer carries no records.
func acquiredNone(t *testing.T, resp kmsg.Response) {
	t.Helper()
	sf := resp.(*kmsg.ShareFetchResponse)
	require.Zero(t, sf.ErrorCode)
	for _, tp := range sf.Topics {
		for _, p := range tp.Partitions {
			require.Empty(t, p.AcquiredRecords)
		}
	}
}
