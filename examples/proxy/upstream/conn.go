package upstream

import (
	"bufio"
	"context"
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

// maxResponseBytes bounds a response frame: far above any fetch a client
// may ask for, far below what a corrupt length would make us allocate.
const maxResponseBytes = 1 << 30

// call is one request on a Conn.
type call struct {
	req      kmsg.Request
	done     func(kmsg.Response, error)
	corr     int32
	deadline time.Time // set when it is written
	// noResponse marks an acks=0 produce: Kafka sends no answer, so done
	// runs once it is written.
	noResponse bool
}

// Conn is one connection to one upstream broker; see the package
// documentation. It is safe for concurrent use.
type Conn struct {
	cl   *Cluster
	node int32  // immutable
	addr string // immutable
	fmt  *kmsg.RequestFormatter

	mu       sync.Mutex // guards the following
	queue    []*call    // sent, not yet written, in Send order
	inflight []*call    // written, not yet answered, in write order
	err      error      // why the connection died; set once
	nc       net.Conn   // nil until dialled
	corr     int32      // the last correlation id given

	wake chan struct{} // capacity 1: the writer has work, or must stop
	done chan struct{} // closed once the writer and the reader have returned
}

// newConn opens a connection to the broker node at addr; it dials on its
// own goroutine, and Send may be called at once.
func (cl *Cluster) newConn(node int32, addr string, clientID string) *Conn {
	c := &Conn{
		cl: cl, node: node, addr: addr,
		fmt:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go c.run()
	return c
}

// Send queues req, to be written at the version it carries, and returns at
// once; done runs exactly once, with the answer or with the error that
// ended the connection (for an acks=0 produce, with nil, nil once it is
// written). On a dead connection done runs before Send returns, on the
// calling goroutine; otherwise on the connection's reader or writer
// goroutine, or on the goroutine closing it. done must not block.
func (c *Conn) Send(req kmsg.Request, done func(kmsg.Response, error)) {
	cl := &call{req: req, done: done}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		cl.noResponse = true
	}
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		done(nil, err)
		return
	}
	c.queue = append(c.queue, cl)
	c.mu.Unlock()
	c.signal()
}

// Do sends req and waits for its answer, or for ctx. A request abandoned
// by ctx stays in flight: the connection's order requires its answer to be
// read.
func (c *Conn) Do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	type result struct {
		resp kmsg.Response
		err  error
	}
	ch := make(chan result, 1)
	c.Send(req, func(resp kmsg.Response, err error) { ch <- result{resp, err} })
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Dead reports whether the connection has failed or was closed: every
// Send fails.
func (c *Conn) Dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// Err returns why the connection died, or nil.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close fails every request queued or in flight with ErrClosed and closes
// the connection; it does not wait for its goroutines (Done does).
func (c *Conn) Close() { c.fail(ErrClosed) }

// Done is closed once the connection's goroutines have returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// fail ends the connection with err, once: it closes the socket, which
// stops the reader and a blocked write, and answers every request queued
// or in flight with err, in order, with no lock held.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	calls := append(c.inflight, c.queue...)
	c.inflight, c.queue = nil, nil
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		_ = nc.Close()
	}
	c.signal()
	if !errors.Is(err, ErrClosed) {
		c.cl.log.Debug("upstream connection failed", zap.Int32("node", c.node), zap.String("addr", c.addr), zap.Error(err))
		c.cl.metrics.failure(err)
	}
	for _, cl := range calls {
		cl.done(nil, err)
	}
}

// run dials, then writes until the connection dies; the reader runs
// beside it once dialled.
func (c *Conn) run() {
	defer close(c.done)
	nc, err := c.cl.dial(c.addr)
	if err != nil {
		c.fail(fmt.Errorf("dial broker %d at %s: %w", c.node, c.addr, err))
		return
	}
	c.mu.Lock()
	if c.err != nil { // closed while dialling
		c.mu.Unlock()
		_ = nc.Close()
		return
	}
	c.nc = nc
	c.mu.Unlock()
	c.cl.metrics.conns.Inc()
	defer c.cl.metrics.conns.Dec()

	read := make(chan struct{})
	go func() { defer close(read); c.read(nc) }()
	c.write(nc)
	<-read
}

// write writes queued requests in order. Each is moved to the in-flight
// list before it is written, so that its answer, which cannot come
// earlier, always finds it there.
func (c *Conn) write(nc net.Conn) {
	bw := bufio.NewWriterSize(nc, 64<<10)
	var buf []byte
	for range c.wake {
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue = nil
		now := time.Now()
		for _, cl := range batch {
			c.corr++
			cl.corr = c.corr
			cl.deadline = now.Add(c.cl.cfg.requestTimeout + waitsUpstream(cl.req))
			if cl.noResponse {
				continue
			}
			if len(c.inflight) == 0 {
				_ = nc.SetReadDeadline(cl.deadline)
			}
			c.inflight = append(c.inflight, cl)
		}
		c.mu.Unlock()

		_ = nc.SetWriteDeadline(now.Add(c.cl.cfg.requestTimeout))
		var err error
		for _, cl := range batch {
			buf = c.fmt.AppendRequest(buf[:0], cl.req, cl.corr)
			if _, err = bw.Write(buf); err != nil {
				break
			}
			c.cl.metrics.sent(cl.req.Key())
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			// Whatever of the batch was buffered may not have left: the
			// acks=0 produces, in no list fail walks, fail here.
			c.failUnanswered(batch, err)
			c.fail(fmt.Errorf("write to broker %d: %w", c.node, err))
			return
		}
		for _, cl := range batch {
			if cl.noResponse {
				cl.done(nil, nil)
			}
		}
	}
}

// failUnanswered answers the acks=0 produces of batch, which are in no
// list that fail walks, with err.
func (c *Conn) failUnanswered(batch []*call, err error) {
	for _, cl := range batch {
		if cl.noResponse {
			cl.done(nil, fmt.Errorf("write to broker %d: %w", c.node, err))
		}
	}
}

// read reads answers in order and hands each to its request's callback.
func (c *Conn) read(nc net.Conn) {
	br := bufio.NewReaderSize(nc, 64<<10)
	var size [4]byte
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			c.fail(readError(c.node, err))
			return
		}
		rd := kbin.Reader{Src: size[:]}
		n := rd.Int32()
		if n < 4 || n > maxResponseBytes {
			c.fail(fmt.Errorf("%w: broker %d sent a frame of %d bytes", ErrProtocol, c.node, n))
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			c.fail(readError(c.node, err))
			return
		}
		rd = kbin.Reader{Src: body}
		corr := rd.Int32()

		c.mu.Lock()
		if len(c.inflight) == 0 || c.inflight[0].corr != corr {
			c.mu.Unlock()
			c.fail(fmt.Errorf("%w: broker %d answered correlation id %d out of order", ErrProtocol, c.node, corr))
			return
		}
		cl := c.inflight[0]
		c.inflight[0] = nil
		c.inflight = c.inflight[1:]
		if len(c.inflight) > 0 {
			_ = nc.SetReadDeadline(c.inflight[0].deadline)
		} else {
			_ = nc.SetReadDeadline(time.Time{})
		}
		c.mu.Unlock()

		resp, err := decode(cl.req, rd.Src)
		cl.done(resp, err)
	}
}

// readError names why a read failed: a deadline is a timeout.
func readError(node int32, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: broker %d", ErrTimeout, node)
	}
	return fmt.Errorf("read from broker %d: %w", node, err)
}

// decode reads the answer to req (after its correlation id) at req's
// version.
func decode(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rd := kbin.Reader{Src: body}
	if resp.IsFlexible() && kmsg.Key(resp.Key()) != kmsg.ApiVersions {
		kmsg.SkipTags(&rd)
	}
	if err := rd.Complete(); err != nil {
		return nil, fmt.Errorf("%w: %s v%d header: %v", ErrProtocol, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrProtocol, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// waitsUpstream is how long req may wait at the broker by design, on top
// of the request timeout.
func waitsUpstream(req kmsg.Request) time.Duration {
	ms := func(v int32) time.Duration { return time.Duration(max(v, 0)) * time.Millisecond }
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return ms(r.MaxWaitMillis)
	case *kmsg.ProduceRequest:
		return ms(r.TimeoutMillis)
	case *kmsg.JoinGroupRequest:
		if r.Version >= 1 {
			return ms(r.RebalanceTimeoutMillis)
		}
		return ms(r.SessionTimeoutMillis)
	case *kmsg.CreateTopicsRequest:
		return ms(r.TimeoutMillis)
	case *kmsg.DeleteTopicsRequest:
		return ms(r.TimeoutMillis)
	case *kmsg.CreatePartitionsRequest:
		return ms(r.TimeoutMillis)
	}
	return 0
}
