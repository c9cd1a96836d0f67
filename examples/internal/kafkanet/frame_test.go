package kafkanet

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bodyProbe is apiVersions, telling the test what each request it serves
// looked like: the client software name, the body's size, and what the
// server's memory budget held while it was served.
type bodyProbe struct {
	apiVersions
	s    **testServer
	seen chan probed
}

type probed struct {
	name     string
	bodySize int
	inUse    int64
}

func (p bodyProbe) ServeKafka(r *Request) {
	name := r.Msg.(*kmsg.ApiVersionsRequest).ClientSoftwareName
	p.seen <- probed{name: name, bodySize: r.BodySize, inUse: (*p.s).mem.inUse()}
	p.apiVersions.ServeKafka(r)
}

// TestFrameArrivesInChunks: requests of every size, from one that sits in
// the reader's buffer to one of 3 MiB spanning every chunk size, sent in
// pieces that cut the chunks anywhere, arrive whole into a body of their
// exact size, which is all the budget holds while they are served; the
// chunks go back, and so does the budget once they are answered.
func TestFrameArrivesInChunks(t *testing.T) {
	var s *testServer
	probe := bodyProbe{s: &s, seen: make(chan probed, 1)}
	s = newTestServerOf(t, probe)

	c := dialRaw(t, s)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	for i, size := range []int{10, 4 << 10, 4<<10 + 1, 13_000, 1 << 20, 3<<20 + 17} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		name := strings.Repeat(string(rune('a'+i)), size)
		req.ClientSoftwareName = name
		frame := f.AppendRequest(nil, req, int32(i))
		for rest, piece := frame, 1; len(rest) > 0; piece = piece*3 + 7 {
			k := min(piece, len(rest))
			c.WriteRaw(rest[:k])
			rest = rest[k:]
		}
		got := <-probe.seen
		assert.Equal(t, len(frame)-4, got.bodySize, "size %d: the body is the frame's", size)
		assert.Equal(t, int64(got.bodySize), got.inUse, "size %d: the budget holds the body, not the chunks", size)
		require.Equal(t, name, got.name, "size %d: the bytes arrive whole and in order", size)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		c.Recv(resp)
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "given back once answered")

	// Pipelined, in one write: the reader takes several frames a read
	// (its big buffer), and each still arrives whole, in order.
	var frames []byte
	var names []string
	for i := range 12 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		names = append(names, strings.Repeat(string(rune('A'+i)), 9_000*(i%4+1)))
		req.ClientSoftwareName = names[i]
		frames = append(frames, f.AppendRequest(nil, req, int32(100+i))...)
	}
	c.WriteRaw(frames)
	for i, name := range names {
		got := <-probe.seen
		require.Equal(t, name, got.name, "frame %d of the burst", i)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		assert.Equal(t, int32(100+i), c.Recv(resp))
	}
	require.Eventually(t, func() bool { return s.mem.inUse() == 0 }, 5*time.Second, time.Millisecond, "given back once answered")
}
