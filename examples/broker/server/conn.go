package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// conn is one client connection. Its reader goroutine reads requests and
// dispatches them as they come, without waiting for earlier ones to be
// answered (pipelining, up to queued.max.requests.per.connection); its
// writer goroutine writes the responses strictly in request order, as
// clients require, whatever order the answers arrive in.
//
// Lock order: conn.mu after any purgatory lock (answers arrive from
// OnComplete); conn.mu is never held while calling out.
type conn struct {
	s      *Server
	nc     net.Conn
	remote net.Addr

	// ctx is the connection's life: every operation waiting on its behalf
	// is submitted with it, and shutdown cancels it, which completes them
	// (outcome ContextDone), so no purgatory keeps a gone client's wait.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex // guards the following
	cond     sync.Cond  // signals the writer, and a reader waiting for room
	queue    []*slot    // answers to write, in request order
	draining bool       // the server is closing: write what is owed, then stop
	stopped  bool       // the reader has returned: no slot will be added
	closed   bool

	served chan struct{} // closed when serve returns
	budget *time.Timer   // decode's watchdog; the reader's alone
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr(), served: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.cond.L = &c.mu
	return c
}

// serve runs the connection until the client goes away, a request is
// malformed, or the server drains it; then it answers whatever still waits.
func (c *conn) serve() {
	defer close(c.served)
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); c.write() }()
	err := c.read()
	c.mu.Lock()
	c.stopped = true
	draining := c.draining
	c.mu.Unlock()
	c.cond.Broadcast()
	if draining {
		// Every waiting request was answered when the purgatories closed:
		// the writer exits once it has written them (or drain's deadline
		// closes the socket under it).
		<-writerDone
	}
	c.shutdown()
	<-writerDone
	switch {
	case err == nil, draining, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.s.log.Debug("connection closed", zap.Stringer("client", c.remote))
	default:
		c.s.log.Info("closing connection", zap.Stringer("client", c.remote), zap.Error(err))
	}
}

// errBadRequest marks a request the broker cannot parse or serve: the
// connection is closed, as Kafka closes it.
var errBadRequest = errors.New("bad request")

func (c *conn) read() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		// Under mu, so that drain's deadline (set under mu) is never
		// overwritten by the idle one.
		c.mu.Lock()
		if c.draining {
			c.mu.Unlock()
			return nil
		}
		c.armIdleLocked()
		c.mu.Unlock()
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return err
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > c.s.cfg.SocketRequestMaxBytes {
			return fmt.Errorf("%w: request of %d bytes (socket.request.max.bytes is %d)", errBadRequest, n, c.s.cfg.SocketRequestMaxBytes)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		r, err := c.parse(body)
		if err != nil {
			return err
		}
		if !c.reserve(r) {
			return nil // closed meanwhile
		}
		c.s.dispatch(r)
	}
}

// parse decodes a request header and body with kmsg. An unknown key or an
// unsupported version is answered or refused as Kafka does (see dispatch).
func (c *conn) parse(body []byte) (*request, error) {
	rd := kbin.Reader{Src: body}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	clientID := rd.NullableString()
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: truncated header", errBadRequest)
	}
	kreq := kmsg.RequestForKey(key)
	if kreq == nil {
		return nil, fmt.Errorf("%w: unknown api key %d", errBadRequest, key)
	}
	r := &request{s: c.s, c: c, kreq: kreq, corr: corr, clientVersion: version, at: time.Now()}
	if clientID != nil {
		r.clientID = *clientID
	}
	if !c.s.supports(key, version) {
		// ApiVersions newer than ours is answered (in v0) with the ranges
		// we serve; anything else unsupported closes the connection.
		if kmsg.Key(key) == kmsg.ApiVersions {
			kreq.SetVersion(0)
			r.kreq = kreq
			return r, nil
		}
		return nil, fmt.Errorf("%w: %s v%d is not supported", errBadRequest, kmsg.NameForKey(key), version)
	}
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		skipTags(&rd)
	}
	if err := rd.Complete(); err != nil {
		return nil, fmt.Errorf("%w: %s v%d header: %v", errBadRequest, kmsg.NameForKey(key), version, err)
	}
	if err := c.decode(kreq, rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", errBadRequest, kmsg.NameForKey(key), version, err)
	}
	return r, nil
}

// skipTags skips a request header's tagged fields. kmsg.SkipTags loops as
// many times as the count read says, even after the bytes run out, so a
// count of 2^32-1 in a 20-byte header kept the reader spinning for tens of
// seconds; this stops at the end of the bytes. (kmsg's body decoders have
// the same loop for every flexible struct's tags, which the broker cannot
// reach: see the data path's report.)
func skipTags(rd *kbin.Reader) {
	for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
		rd.Uvarint()               // the tag
		rd.Span(int(rd.Uvarint())) // its value
	}
}

// reserve gives r its place in the response order, waiting while too many
// requests are ahead of their responses. It reports false once closed.
func (c *conn) reserve(r *request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && len(c.queue) >= c.s.cfg.MaxInFlightPerConn {
		c.cond.Wait()
	}
	if c.closed {
		return false
	}
	r.slot = &slot{corr: r.corr}
	c.queue = append(c.queue, r.slot)
	return true
}

// fill records a request's answer and wakes the writer.
func (c *conn) fill(s *slot, resp kmsg.Response, skip bool) {
	c.mu.Lock()
	s.resp, s.skip, s.ready = resp, skip, true
	c.mu.Unlock()
	c.cond.Broadcast()
}

// write sends answers in request order as they become ready.
func (c *conn) write() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	defer func() { _ = bw.Flush() }()
	for {
		c.mu.Lock()
		for !c.closed && (len(c.queue) == 0 || !c.queue[0].ready) {
			if c.draining && c.stopped && len(c.queue) == 0 {
				c.mu.Unlock()
				return // everything owed is written
			}
			if bw.Buffered() > 0 {
				// Nothing ready: send what is buffered before sleeping.
				c.mu.Unlock()
				if err := bw.Flush(); err != nil {
					c.fail(err)
					return
				}
				c.mu.Lock()
				continue
			}
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		s := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.armIdleLocked() // the last answer owed: idle time starts
		}
		c.mu.Unlock()
		c.cond.Broadcast() // a reader may wait for room

		if s.skip {
			if s.hangUp {
				// Everything owed before it is written: now close, as
				// Kafka does after a failed acks=0 produce.
				_ = bw.Flush() // a failure only means the client went first
				c.fail(errHangUp)
				return
			}
			continue
		}
		buf = append(buf[:0], 0, 0, 0, 0, 0, 0, 0, 0) // size, correlation id
		if s.resp.IsFlexible() && kmsg.Key(s.resp.Key()) != kmsg.ApiVersions {
			buf = append(buf, 0) // the response header's empty tag section
		}
		buf = s.resp.AppendTo(buf)
		binary.BigEndian.PutUint32(buf[:4], uint32(len(buf)-4))
		binary.BigEndian.PutUint32(buf[4:8], uint32(s.corr))
		if _, err := bw.Write(buf); err != nil {
			c.fail(err)
			return
		}
	}
}

// fail closes the connection after a write error, or to hang up. It marks
// the connection closed first: the writer is gone, so a reader waiting in
// reserve for room in the queue would otherwise wait forever.
func (c *conn) fail(err error) {
	c.s.log.Debug("write failed", zap.Stringer("client", c.remote), zap.Error(err))
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cond.Broadcast()
	_ = c.nc.Close()
}

// errHangUp is why the writer closes a connection on a hang-up slot.
var errHangUp = errors.New("hanging up after a failed acks=0 produce")

// hangUp marks s answered without a response, and the connection to be
// closed once the answers before s are written.
func (c *conn) hangUp(s *slot) {
	c.mu.Lock()
	s.skip, s.hangUp, s.ready = true, true, true
	c.mu.Unlock()
	c.cond.Broadcast()
}

// shutdown closes the socket, stops the writer and cancels the
// connection's context, which answers every operation still waiting for
// this connection (the answers go nowhere: the writer has stopped), so no
// purgatory keeps it.
func (c *conn) shutdown() {
	_ = c.nc.Close()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cond.Broadcast()
	c.cancel()
}

// armIdleLocked sets the read deadline of connections.max.idle.ms when
// nothing is owed to the client, and clears it otherwise: a client waiting
// for an answer (a JoinGroup through a long rebalance) is not idle. The
// writer re-arms it when it writes the last answer owed.
//
// REQUIRES: c.mu held.
func (c *conn) armIdleLocked() {
	d := c.s.cfg.ConnectionsMaxIdle
	switch {
	case d <= 0 || c.draining:
	case len(c.queue) == 0:
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	default:
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}
