package kafkanet

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTricklingSenderClosedAtRequestDeadline: a client that sends a byte of
// its request every 20 ms, never silent for socket.read.timeout.ms, is
// still closed once the request has not arrived whole within it: the read
// timeout is the whole request's deadline, not a measure of silence.
func TestTricklingSenderClosedAtRequestDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := newTestServer(t, WithReadTimeout(timeout))
	c := dialRaw(t, s)
	start := time.Now()                         // before the first byte: the deadline cannot start earlier
	newTricklers(t).halfSend(c, 100<<10, 8<<10) // no write deadline: it trickles until closed
	assert.True(t, c.ClosedByPeer(), "closed while it trickles")
	assert.GreaterOrEqual(t, time.Since(start), timeout, "not before its deadline")
	assert.Equal(t, 1.0, refused(s, refuseSlowRequest), "counted as a slow request")
}

// TestPiecemealRequestWithinDeadlineServed: a request sent in pieces,
// with pauses, but whole within socket.read.timeout.ms of its first
// byte, is served: a slow link has the whole timeout for its request.
func TestPiecemealRequestWithinDeadlineServed(t *testing.T) {
	s := newTestServer(t, WithReadTimeout(2*time.Second))
	c := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = strings.Repeat("x", 20<<10) // past the reader's buffer: read into chunks
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 1)
	piece := len(frame)/6 + 1
	for rest := frame; len(rest) > 0; {
		k := min(piece, len(rest))
		c.WriteRaw(rest[:k])
		rest = rest[k:]
		if len(rest) > 0 {
			time.Sleep(50 * time.Millisecond) // pauses, not the verdict: 250 ms of the 2 s
		}
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	assert.Equal(t, int32(1), c.Recv(resp), "answered")
	assert.Zero(t, refused(s, refuseSlowRequest))
}

// parker is apiVersions, but a request whose client software name begins
// with "park" is handed to the test (parked) instead of answered: its body
// holds the memory budget until the test answers it.
type parker struct {
	apiVersions
	parked chan *Request
}

func (p parker) ServeKafka(r *Request) {
	if strings.HasPrefix(r.Msg.(*kmsg.ApiVersionsRequest).ClientSoftwareName, "park") {
		p.parked <- r
		return
	}
	p.apiVersions.ServeKafka(r)
}

// TestMemoryWaitNotCountedAgainstDeadline: the time a reader waits for
// memory is the server's, not the client's: a request whose reading waits
// past socket.read.timeout.ms for the budget is read, once bytes come
// back, with the rest of its time, and served.
func TestMemoryWaitNotCountedAgainstDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	p := parker{parked: make(chan *Request, 1)}
	s := newTestServerOf(t, p, WithMemoryBudget(64<<10), WithMemoryShares(-1, -1), WithReadTimeout(timeout))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))

	// A 100 KiB request, read whole past the budget (the overdraft), then
	// parked: its body holds the overdraft.
	holder := dialRaw(t, s)
	big := kmsg.NewPtrApiVersionsRequest()
	big.Version = 3
	big.ClientSoftwareName = "park" + strings.Repeat("p", 100<<10)
	holder.WriteRaw(f.AppendRequest(nil, big, 1))
	parked := <-p.parked

	// A 20 KiB request, sent whole: its reader waits for memory.
	c := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = strings.Repeat("x", 20<<10)
	c.WriteRaw(f.AppendRequest(nil, req, 7))
	require.Eventually(t, func() bool { return s.readersWaiting() == 1 }, 5*time.Second, time.Millisecond, "its reader waits for memory")
	time.Sleep(2 * timeout) // its deadline, had the wait counted, is past

	p.apiVersions.ServeKafka(parked) // the body goes back
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	assert.Equal(t, int32(7), c.Recv(resp), "read and answered")
	assert.Zero(t, refused(s, refuseSlowRequest))
}
