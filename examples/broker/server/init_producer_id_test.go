package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitProducerID(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	seen := map[int64]bool{}
	for _, v := range versions(0, 5) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.SetVersion(v)
			if v >= 3 {
				req.ProducerID, req.ProducerEpoch = 0, 4 // asking for a bump: a new id, as Kafka
			}
			resp := c.RoundTrip(req).(*kmsg.InitProducerIDResponse)
			assert.Equal(t, int16(0), resp.ErrorCode)
			assert.GreaterOrEqual(t, resp.ProducerID, int64(0))
			assert.False(t, seen[resp.ProducerID], "a new id each time")
			seen[resp.ProducerID] = true
			assert.Equal(t, int16(0), resp.ProducerEpoch)
		})
	}
}

// TestInitProducerIDTransactional: a transactional id gets its producer
// id from its transaction coordinator, the epoch bumped on each call (the
// older producer fenced); an empty id, or a timeout out of range, is
// refused as Kafka refuses it.
func TestInitProducerIDTransactional(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	init := func(id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = timeoutMs
		req.ProducerID, req.ProducerEpoch = -1, -1
		return c.RoundTrip(req).(*kmsg.InitProducerIDResponse)
	}
	resp := init("", 60000)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, "an empty transactional id")
	assert.Equal(t, int64(-1), resp.ProducerID)
	for _, timeout := range []int32{0, -1, 900001} {
		resp = init("txn", timeout)
		assert.Equal(t, kerr.InvalidTransactionTimeout.Code, resp.ErrorCode, "timeout %dms", timeout)
	}
	require.Eventually(t, func() bool {
		resp = init("txn", 60000)
		return resp.ErrorCode == 0
	}, 10*time.Second, 10*time.Millisecond, "the coordinator loads __transaction_state")
	first := resp
	assert.GreaterOrEqual(t, first.ProducerID, int64(0))
	assert.Equal(t, int16(0), first.ProducerEpoch)
	resp = init("txn", 60000)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, first.ProducerID, resp.ProducerID, "the id's producer id is kept")
	assert.Equal(t, int16(1), resp.ProducerEpoch, "its epoch bumped: the older producer is fenced")
}
