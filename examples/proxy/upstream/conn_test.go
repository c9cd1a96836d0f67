package upstream

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnKeepsVersionsAndOrder sends requests at several versions without
// waiting: the broker reads each at the version it was given, in Send
// order, and each callback gets its own answer, in order.
func TestConnKeepsVersionsAndOrder(t *testing.T) {
	p := newPeer(t, answerAll)
	cl := newTestCluster(t, p.addr())
	c := cl.NewSession("client-7")
	defer c.Close()
	versions := []int16{0, 4, 9, 12, 7, 13}
	var chans []chan result
	for _, v := range versions {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		done, ch := collect()
		c.Send(-1, req, done)
		chans = append(chans, ch)
	}
	for i, ch := range chans {
		r := recvResult(t, ch)
		require.NoError(t, r.err)
		assert.Equal(t, versions[i], r.resp.GetVersion(), "answer %d read at its request's version", i)
	}
	var got []int16
	for _, s := range p.requests() {
		if s.key == int16(kmsg.Metadata) && s.clientID == "client-7" {
			got = append(got, s.version)
		}
	}
	assert.Equal(t, versions, got, "written in Send order, each at its own version, with the client's id")
}

// TestConnTimesOut: an answer that does not come within the request
// timeout (plus what the request waits by design) fails the request and
// everything behind it; the connection is dead after.
func TestConnTimesOut(t *testing.T) {
	p := newPeer(t, func(seen) (kmsg.Response, int32) { return nil, 0 }) // never answers
	cl := newTestCluster(t, p.addr(), WithRequestTimeout(100*time.Millisecond))
	c, err := cl.Dial(-1)
	require.NoError(t, err)
	defer func() { c.Close(); <-c.Done() }()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxWaitMillis = 200
	done, ch := collect()
	start := time.Now()
	c.Send(fetch, done)
	done2, ch2 := collect()
	c.Send(kmsg.NewPtrMetadataRequest(), done2)
	r := recvResult(t, ch)
	assert.ErrorIs(t, r.err, ErrTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the fetch's max wait, then the request timeout")
	assert.ErrorIs(t, recvResult(t, ch2).err, ErrTimeout, "the request behind it fails too")
	assert.True(t, c.Dead())
	done3, ch3 := collect()
	c.Send(kmsg.NewPtrMetadataRequest(), done3)
	assert.ErrorIs(t, recvResult(t, ch3).err, ErrTimeout, "a dead connection fails at once, with why it died")
}

// TestConnRefusesAnAnswerOutOfOrder: an answer with another request's
// correlation id is a protocol error that ends the connection.
func TestConnRefusesAnAnswerOutOfOrder(t *testing.T) {
	p := newPeer(t, func(s seen) (kmsg.Response, int32) { return s.req.ResponseKind(), s.corr + 1 })
	cl := newTestCluster(t, p.addr())
	c, err := cl.Dial(-1)
	require.NoError(t, err)
	defer func() { c.Close(); <-c.Done() }()
	done, ch := collect()
	c.Send(kmsg.NewPtrMetadataRequest(), done)
	assert.ErrorIs(t, recvResult(t, ch).err, ErrProtocol)
}

// TestConnCloseAnswersEverythingOnce: Close fails every request queued or
// in flight with ErrClosed, each once.
func TestConnCloseAnswersEverythingOnce(t *testing.T) {
	p := newPeer(t, func(seen) (kmsg.Response, int32) { return nil, 0 })
	cl := newTestCluster(t, p.addr())
	c, err := cl.Dial(-1)
	require.NoError(t, err)
	done, ch := collect()
	for range 5 {
		c.Send(kmsg.NewPtrMetadataRequest(), done)
	}
	require.Eventually(t, func() bool { return len(p.requests()) >= 1 }, 5*time.Second, time.Millisecond, "written")
	c.Close()
	<-c.Done()
	for range 5 {
		assert.ErrorIs(t, recvResult(t, ch).err, ErrClosed)
	}
	select {
	case r := <-ch:
		t.Fatalf("a sixth callback: %v", r.err)
	default:
	}
}

// TestConnAcksZeroProduce: an acks=0 produce gets no answer from Kafka; its
// callback runs once it is written, and the request after it gets its own
// answer.
func TestConnAcksZeroProduce(t *testing.T) {
	p := newPeer(t, func(s seen) (kmsg.Response, int32) {
		if s.key == int16(kmsg.Produce) {
			return nil, 0
		}
		return s.req.ResponseKind(), s.corr
	})
	cl := newTestCluster(t, p.addr())
	c, err := cl.Dial(-1)
	require.NoError(t, err)
	defer func() { c.Close(); <-c.Done() }()
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks = 0
	done, ch := collect()
	c.Send(produce, done)
	done2, ch2 := collect()
	c.Send(kmsg.NewPtrMetadataRequest(), done2)
	r := recvResult(t, ch)
	assert.NoError(t, r.err)
	assert.Nil(t, r.resp, "nothing to read")
	r = recvResult(t, ch2)
	require.NoError(t, r.err)
	assert.IsType(t, &kmsg.MetadataResponse{}, r.resp)
}

// TestDialBacksOff: an address that refused a dial is not dialled again
// until its backoff passes.
func TestDialBacksOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	cl := newTestCluster(t, addr, WithReconnectBackoff(200*time.Millisecond, time.Second))
	// The metadata loop dials the seed at start: wait for its failure.
	require.Eventually(t, func() bool {
		_, err := cl.dial(addr)
		return errors.Is(err, ErrBackoff)
	}, 5*time.Second, time.Millisecond, "refused, then backing off")
	_, err = cl.dial(addr)
	assert.ErrorIs(t, err, ErrBackoff, "still backing off")
	assert.NotErrorIs(t, err, errDial, "without dialling")
	require.Eventually(t, func() bool {
		_, err := cl.dial(addr)
		return errors.Is(err, errDial)
	}, 5*time.Second, 5*time.Millisecond, "dialled again once the backoff passed")
}
