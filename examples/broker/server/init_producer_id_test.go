package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
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

func TestInitProducerIDRefusesTransactions(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for _, id := range []string{"txn", ""} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID = kmsg.StringPtr(id)
		resp := c.RoundTrip(req).(*kmsg.InitProducerIDResponse)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, "transactional id %q", id)
		assert.False(t, kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)), "clients give up rather than retry")
		assert.Equal(t, int64(-1), resp.ProducerID)
	}
}
