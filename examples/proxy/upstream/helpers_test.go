package upstream

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seen is a request as the peer read it off the wire.
type seen struct {
	key, version int16
	corr         int32
	clientID     string
	req          kmsg.Request
}

// peer is a TCP server speaking the Kafka framing with kmsg: it reads each
// request and hands it to answer, which returns the response to write (nil:
// write nothing) and the correlation id to write it with.
type peer struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []seen
	done chan struct{}
}

func newPeer(t *testing.T, answer func(s seen) (kmsg.Response, int32)) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &peer{ln: ln, done: make(chan struct{})}
	var conns sync.WaitGroup
	go func() {
		defer close(p.done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				conns.Wait()
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				p.serve(nc, answer)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-p.done })
	return p
}

func (p *peer) addr() string { return p.ln.Addr().String() }

func (p *peer) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.got...)
}

func (p *peer) serve(nc net.Conn, answer func(s seen) (kmsg.Response, int32)) {
	defer nc.Close()
	go func() { <-p.done; _ = nc.Close() }() // the listener's close ends it
	br := bufio.NewReader(nc)
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		rd := kbin.Reader{Src: body}
		s := seen{key: rd.Int16(), version: rd.Int16(), corr: rd.Int32()}
		if id := rd.NullableString(); id != nil {
			s.clientID = *id
		}
		s.req = kmsg.RequestForKey(s.key)
		s.req.SetVersion(s.version)
		if s.req.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		if err := s.req.ReadFrom(rd.Src); err != nil {
			return
		}
		p.mu.Lock()
		p.got = append(p.got, s)
		p.mu.Unlock()
		resp, corr := answer(s)
		if resp == nil {
			continue
		}
		resp.SetVersion(s.version)
		out := kbin.AppendInt32(nil, 0)
		out = kbin.AppendInt32(out, corr)
		if resp.IsFlexible() && kmsg.Key(resp.Key()) != kmsg.ApiVersions {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// answerAll answers every request with its empty response, in order.
func answerAll(s seen) (kmsg.Response, int32) { return s.req.ResponseKind(), s.corr }

// newTestCluster returns a cluster seeded with addr whose metadata loop
// waits an hour between refreshes, closed when the test ends.
func newTestCluster(t *testing.T, addr string, opts ...Option) *Cluster {
	t.Helper()
	cl, err := New(append([]Option{WithSeeds(addr), WithMetadataMaxAge(time.Hour)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// result is one callback's arguments.
type result struct {
	resp kmsg.Response
	err  error
}

// collect returns a callback that sends its result on a channel.
func collect() (func(kmsg.Response, error), chan result) {
	ch := make(chan result, 16)
	return func(resp kmsg.Response, err error) { ch <- result{resp, err} }, ch
}

func recvResult(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no callback within 10s")
		return result{}
	}
}
