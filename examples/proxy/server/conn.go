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

	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// conn is one client connection. Its reader goroutine reads requests and
// hands each to its handler without waiting for earlier answers
// (pipelining, up to queued.max.requests.per.connection ahead); the answers
// go out strictly in request order, whatever order they become ready in:
// clients match answers to requests by order.
//
// Who writes: an answer made while its request is dispatched (a fetch the
// cache answers, a metadata request) is written by the reader once
// dispatch returns, when no further request is buffered, so that it costs
// no goroutine wake-up; an answer that arrives later (from upstream, from a
// waiting fetch's completion) wakes the writer goroutine. One of them
// writes at a time (writing), taking every ready answer in order.
//
// Lock order: conn.mu is a leaf. Answers arrive from operations'
// OnComplete and from upstream callbacks, which hold no lock of theirs
// then; conn.mu is never held while calling out.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	served chan struct{} // closed when serve returns

	// ctx is the connection's life: the fetches waiting on its behalf are
	// submitted with it, and close cancels it, which completes them
	// (outcome ContextDone), so no purgatory keeps a gone client's wait.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex        // guards the following
	cond     sync.Cond         // on mu: an answer is ready, there is room, or the end
	owed     []*request        // read and not yet written, in request order
	session  *upstream.Session // opened on the first forwarded request
	draining bool              // the server closes: read no more, write what is owed
	readDone bool              // the reader returned: nothing more will be owed
	closed   bool              // the socket is closed: nothing more is written
	writing  bool              // the writer or the reader is writing answers

	// Used by whichever goroutine set writing, until it clears it.
	bw  *bufio.Writer
	buf []byte
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String(), served: make(chan struct{})}
	c.bw = bufio.NewWriterSize(nc, 64<<10)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.cond.L = &c.mu
	return c
}

// serve runs the connection until the client leaves, sends what cannot be
// read, or the server drains it.
func (c *conn) serve() {
	defer close(c.served)
	wrote := make(chan struct{})
	go func() { defer close(wrote); c.write() }()
	err := c.read()
	c.mu.Lock()
	c.readDone = true
	draining := c.draining
	c.mu.Unlock()
	c.cond.Broadcast()
	if draining {
		<-wrote // it writes what is owed, or drain's deadline closes the socket
	}
	c.close()
	<-wrote
	switch {
	case err == nil, draining, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.s.log.Debug("connection closed", zap.String("client", c.remote))
	default:
		c.s.log.Info("closing connection", zap.String("client", c.remote), zap.Error(err))
	}
}

// read reads and dispatches requests until an error or the drain.
func (c *conn) read() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		if !c.armRead() {
			return nil
		}
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return err
		}
		rd := kbin.Reader{Src: size[:]}
		n := rd.Int32()
		if n < 8 || n > c.s.cfg.SocketRequestMaxBytes {
			return fmt.Errorf("%w: request of %d bytes (socket.request.max.bytes is %d)", ErrBadRequest, n, c.s.cfg.SocketRequestMaxBytes)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		r, err := c.parse(body)
		if err != nil {
			return err
		}
		if !c.enqueue(r) {
			return nil
		}
		c.s.dispatch(r)
		if !c.dispatched(r, br.Buffered() == 0) {
			return nil // the write failed or hung up: the connection is closed
		}
	}
}

// dispatched runs on the reader once r's dispatch returned: an answer made
// meanwhile woke no writer (see answer). With idle (no request buffered
// behind r) the reader writes whatever answers are ready itself, unless a
// write is under way; otherwise it wakes the writer if anything is ready.
// It reports false when its write failed or hung up (the connection is
// closed).
func (c *conn) dispatched(r *request, idle bool) bool {
	c.mu.Lock()
	r.inDispatch = false
	ready := len(c.owed) > 0 && c.owed[0].state != pending
	if !ready || c.writing || c.closed {
		c.mu.Unlock()
		return true
	}
	if !idle {
		c.mu.Unlock()
		c.cond.Broadcast() // more requests to read first: the writer writes
		return true
	}
	c.writing = true
	c.mu.Unlock()
	if err := c.writeReady(true); err != nil {
		c.close()
		return false
	}
	return true
}

// armRead sets the read deadline before a read: connections.max.idle.ms
// when nothing is owed (a client waiting for an answer is not idle), none
// otherwise. It reports false once draining, whose deadline it must not
// overwrite.
func (c *conn) armRead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.armIdleLocked()
	return true
}

// REQUIRES: c.mu held.
func (c *conn) armIdleLocked() {
	switch d := c.s.cfg.ConnectionsMaxIdle; {
	case d <= 0 || c.draining:
	case len(c.owed) == 0:
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	default:
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// enqueue gives r its place in the answer order, waiting while too many
// are owed. It reports false once the connection is closed.
func (c *conn) enqueue(r *request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && len(c.owed) >= c.s.cfg.MaxInFlightPerConn {
		c.cond.Wait()
	}
	if c.closed {
		return false
	}
	r.inDispatch = true
	c.owed = append(c.owed, r)
	return true
}

// answer records how r is answered, the first time, and wakes the writer,
// unless r is still being dispatched: the reader then sees the answer when
// dispatch returns (dispatched).
func (c *conn) answer(r *request, st answerState, resp kmsg.Response) {
	c.mu.Lock()
	if r.state != pending {
		c.mu.Unlock()
		return
	}
	r.state, r.resp = st, resp
	wake := !r.inDispatch
	c.mu.Unlock()
	if wake {
		c.cond.Broadcast()
	}
}

// write is the writer goroutine: it waits until the answer owed first is
// ready and nobody writes, then writes (writeReady).
func (c *conn) write() {
	for {
		c.mu.Lock()
		for !c.closed && (c.writing || len(c.owed) == 0 || c.owed[0].state == pending) {
			if c.readDone && len(c.owed) == 0 && !c.writing {
				c.mu.Unlock()
				return // everything owed is written
			}
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.writing = true
		c.mu.Unlock()
		if err := c.writeReady(false); err != nil {
			c.close()
			return
		}
	}
}

// errHangUp ends a connection whose answer says to hang up.
var errHangUp = errors.New("hanging up")

// writeReady writes the answers ready at the head of the order, and those
// that become ready there while it writes, flushing whenever the next one
// is not ready yet; it clears writing after its last flush, so no later
// answer is written before the ones it buffered. byReader: the reader
// calls it, so no reader waits for room and it wakes nobody (the writer
// goroutine would have nothing to do). An error is a failed write or
// errHangUp.
//
// REQUIRES: the caller set writing (under mu), and does not hold mu.
func (c *conn) writeReady(byReader bool) error {
	for {
		c.mu.Lock()
		if c.closed || len(c.owed) == 0 || c.owed[0].state == pending {
			if c.bw.Buffered() > 0 && !c.closed {
				c.mu.Unlock()
				if err := c.bw.Flush(); err != nil {
					return err
				}
				continue
			}
			c.writing = false
			c.mu.Unlock()
			return nil
		}
		r := c.owed[0]
		c.owed[0] = nil
		c.owed = c.owed[1:]
		if len(c.owed) == 0 {
			c.armIdleLocked()
		}
		c.mu.Unlock()
		if !byReader {
			c.cond.Broadcast() // the reader may wait for room
		}

		c.s.metrics.observe(r.kreq.Key(), time.Since(r.at))
		switch r.state {
		case noResponse:
			continue
		case hangUp:
			_ = c.bw.Flush() // a failure only means the client left first
			return errHangUp
		}
		c.buf = kbin.AppendInt32(c.buf[:0], 0) // the size, set below
		c.buf = kbin.AppendInt32(c.buf, r.corr)
		if r.resp.IsFlexible() && kmsg.Key(r.resp.Key()) != kmsg.ApiVersions {
			c.buf = append(c.buf, 0) // the response header's empty tag section
		}
		c.buf = r.resp.AppendTo(c.buf)
		binary.BigEndian.PutUint32(c.buf[:4], uint32(len(c.buf)-4))
		if _, err := c.bw.Write(c.buf); err != nil {
			return err
		}
	}
}

// close closes the socket, stops the writer, completes the fetches waiting
// on this connection's behalf (their answers go nowhere) and closes its
// upstream connections. Idempotent.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	sess := c.session
	c.mu.Unlock()
	c.cond.Broadcast()
	_ = c.nc.Close()
	c.cancel()
	if sess != nil {
		sess.Close()
	}
}

// drain stops the reader and waits until everything owed is written, or
// ctx ends, when it closes the socket under the writer.
func (c *conn) drain(done <-chan struct{}) {
	c.mu.Lock()
	c.draining = true
	_ = c.nc.SetReadDeadline(time.Now()) // the reader stops at its next read
	c.mu.Unlock()
	c.cond.Broadcast()
	select {
	case <-c.served:
	case <-done:
		_ = c.nc.Close()
		<-c.served
	}
}

// upstream returns the connection's upstream session, opened with the
// client id of its first request; nil once closed.
func (c *conn) upstream(clientID string) *upstream.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.session == nil {
		c.session = c.s.cl.NewSession(clientID)
	}
	return c.session
}
