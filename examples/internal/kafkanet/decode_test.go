package kafkanet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecodeSlotsBoundConcurrentDecodes: with every decode slot taken, a
// request waits to be decoded, its reader blocked, and goes on once a slot
// frees; the server's drain ends the waits of the others.
func TestDecodeSlotsBoundConcurrentDecodes(t *testing.T) {
	s := newTestServer(t)
	for range cap(s.decodeSlots) {
		s.decodeSlots <- struct{}{} // every slot busy
	}
	waiting := func(n int64) func() bool { return func() bool { return s.decodesWaiting.Load() == n } }
	c := dialRaw(t, s)
	corr := c.Send(kmsg.NewPtrApiVersionsRequest())
	require.Eventually(t, waiting(1), 5*time.Second, time.Millisecond, "the request waits for a slot")

	<-s.decodeSlots // one slot frees
	resp := kmsg.NewPtrApiVersionsResponse()
	assert.Equal(t, corr, c.Recv(resp), "the waiting request is decoded and answered")
	require.Equal(t, int64(0), s.decodesWaiting.Load())

	s.decodeSlots <- struct{}{} // busy again
	other := dialRaw(t, s)
	other.Send(kmsg.NewPtrApiVersionsRequest())
	require.Eventually(t, waiting(1), 5*time.Second, time.Millisecond, "another request waits")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close())
	start := time.Now()
	s.Drain(ctx)
	assert.Less(t, time.Since(start), 4*time.Second, "draining does not wait for a slot")
	assert.Equal(t, int64(0), s.decodesWaiting.Load(), "the wait was given up")
}
