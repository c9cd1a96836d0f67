package kafkanet

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Conn is one client connection. Its reader goroutine reads requests and
// hands them to the Handler as they come, without waiting for earlier ones to be
// answered (pipelining, up to queued.max.requests.per.connection); the
// responses go out strictly in request order, as clients require, whatever
// order the answers arrive in.
//
// Who writes: an answer made while its request is dispatched (a metadata
// request, a produce the high watermark already covers) is written by the
// reader itself once dispatch returns, when it has no further request
// buffered, so that the commonest exchange costs no goroutine wake-up; an
// answer that arrives later (a fetch that waited, from the goroutine that
// completed it) wakes the writer goroutine. One of them writes at a time
// (writing), taking every ready answer in order, so order holds either way.
//
// Lock order: Conn.mu after any lock of the handler's (answers arrive from
// purgatories' OnComplete); Conn.mu is never held while calling out.
type Conn struct {
	s      *Server
	nc     net.Conn
	remote net.Addr
	host   string    // the client's address without its port: max.connections.per.ip counts by it
	ln     *Listener // the listener it came from; nil for a bare net.Listener (PLAINTEXT)

	// principal is who the client is (Principal); auth, on a SASL
	// listener, how it authenticates (sasl_gate.go), the reader's alone.
	principal atomic.Pointer[string]
	auth      *authState

	// quit is closed when the connection stops reading for good (its
	// reader returned, its writer failed, or the server drains it): it
	// ends the reader's waits for memory and for a decode slot.
	quit     chan struct{}
	quitOnce sync.Once

	// ctx is the connection's life (Context): every operation waiting on
	// its behalf is submitted with it, and shutdown cancels it, which
	// completes them (outcome ContextDone), so no purgatory keeps a gone
	// client's wait. WithConnContext may derive it; immutable.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex // guards the following
	cond     sync.Cond  // signals the writer, and a reader waiting for room
	queue    []*slot    // answers to write, in request order
	writing  bool       // the writer or the reader is writing answers from the queue
	draining bool       // the server is closing: write what is owed, then stop
	inFrame  bool       // the reader is in a frame: its deadline is socket.read.timeout.ms, not idleness
	stopped  bool       // the reader has returned: no slot will be added
	closed   bool
	mutes    int // throttles pending (throttle.go): the reader reads no request while above 0

	served chan struct{} // closed when serve returns

	// The reader's alone: chunks is the storage of the chunk list a
	// frame's body arrives into (readFrame), reused frame after frame;
	// frameDeadline is when the frame being read must have arrived whole,
	// and waitStart when the reader's wait for memory began, zero if it
	// is not waiting (deadline.go).
	chunks        []chunk
	frameDeadline time.Time
	waitStart     time.Time

	// memWait and shareWait are called when the reader stops for the
	// memory budget or its host's share (waitingForMemory); immutable.
	memWait, shareWait func()
}

func newConn(s *Server, nc net.Conn, ln *Listener) *Conn {
	c := &Conn{s: s, nc: nc, remote: nc.RemoteAddr(), ln: ln, served: make(chan struct{}), quit: make(chan struct{})}
	c.host = hostOf(c.remote)
	c.setPrincipal(Anonymous)
	if ln != nil && ln.protocol.SASL() {
		c.auth = &authState{}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if s.cfg.connContext != nil {
		c.ctx = s.cfg.connContext(c.ctx, c)
	}
	c.cond.L = &c.mu
	c.memWait, c.shareWait = c.waitingForMemory()
	return c
}

// Context returns the connection's context: it is cancelled when the
// connection closes, so that an operation submitted with it (a
// purgatory's TryCompleteElseWatchContext) completes at once when its
// client goes away.
func (c *Conn) Context() context.Context { return c.ctx }

// RemoteAddr returns the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// Listener returns the listener the connection came from, nil for one
// Serve was given as a bare net.Listener.
func (c *Conn) Listener() *Listener { return c.ln }

// Principal returns who the client is: "User:" and its SASL user name
// once it authenticated on a SASL listener, its certificate's subject on
// an SSL listener that asked for one, User:ANONYMOUS otherwise.
func (c *Conn) Principal() string { return *c.principal.Load() }

func (c *Conn) setPrincipal(p string) { c.principal.Store(&p) }

// hostOf returns addr's host, without its port.
func hostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// errStopReading is returned by the reader's waits (for memory, for a
// decode slot) when the connection stops reading meanwhile.
var errStopReading = errors.New("the connection stopped reading")

// stopReading closes quit, once.
func (c *Conn) stopReading() { c.quitOnce.Do(func() { close(c.quit) }) }

// serve runs the connection until the client goes away, a request is
// malformed, or the server drains it; then it answers whatever still waits.
func (c *Conn) serve() {
	defer close(c.served)
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); c.write() }()
	err := c.read()
	c.stopReading()
	c.mu.Lock()
	c.stopped = true
	draining := c.draining
	c.mu.Unlock()
	c.cond.Broadcast()
	if draining {
		// Every waiting request is answered as the server's owner closes
		// what they wait in: the writer exits once it has written them
		// (or drain's deadline closes the socket under it).
		<-writerDone
	}
	c.shutdown()
	<-writerDone
	c.releaseQueued()
	if c.s.cfg.connClosed != nil {
		c.s.cfg.connClosed(c)
	}
	switch {
	case err == nil, draining, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.s.log.Debug("connection closed", zap.Stringer("client", c.remote))
	case errors.Is(err, ErrBadRequest), errors.Is(err, errSlowRequest):
		// A refusal, counted and logged (at most once a minute per
		// client host) where it was made: a flood of bad requests must
		// not flood the log.
		c.s.log.Debug("closing connection", zap.Stringer("client", c.remote), zap.Error(err))
	default:
		c.s.log.Info("closing connection", zap.Stringer("client", c.remote), zap.Error(err))
	}
}

func (c *Conn) read() error {
	// A small buffer sits with every connection, idle or not; a big one
	// is held while a client sends faster than it takes (connReader).
	if err := c.handshakeTLS(); err != nil {
		return err
	}
	br := newConnReader(c.nc)
	defer br.release()
	for {
		br.shrink() // before waiting for the next request
		// Under mu, so that drain's deadline (set under mu) is never
		// overwritten by the idle one. A throttled connection reads
		// nothing until its mute ends (throttle.go): its client is not
		// idle meanwhile, and the idle deadline is armed after it.
		c.mu.Lock()
		c.awaitUnmutedLocked()
		if c.draining {
			c.mu.Unlock()
			return nil
		}
		c.inFrame = false // the last frame is read: waiting for the next is idleness
		c.armIdleLocked()
		c.mu.Unlock()
		body, charge, err := c.readFrame(br)
		if errors.Is(err, errStopReading) {
			return nil
		}
		if err != nil {
			return err
		}
		r, err := c.parse(body)
		if errors.Is(err, errStopReading) {
			c.s.mem.releaseAll(charge)
			return nil
		}
		if err != nil {
			c.s.mem.releaseAll(charge)
			c.s.refusals.refuse(c.remote, refuseMalformed, zap.Error(err))
			return err
		}
		r.charge = charge
		if err := c.admitAuth(r); err != nil {
			c.s.mem.releaseAll(charge)
			c.s.refusals.refuse(c.remote, refuseUnauthenticated, zap.Error(err))
			return err
		}
		if !c.reserve(r) {
			c.s.mem.releaseAll(charge)
			return nil // closed meanwhile
		}
		if c.authenticates(r) {
			c.authenticate(r)
		} else {
			c.s.dispatch(r)
		}
		if !c.dispatched(r.slot, br.Buffered() == 0) {
			return nil // the write failed or hung up: the connection is closed
		}
		if c.auth != nil && c.auth.failed {
			// A failed authentication's answer comes after a delay,
			// and the connection closes once it is written: read no
			// more meanwhile (the writer's close, or a drain, ends
			// the wait).
			<-c.quit
			return nil
		}
	}
}

// handshakeTLS completes a TLS connection's handshake within
// socket.read.timeout.ms and takes its principal from the client's
// certificate, if any; a failed handshake is refused (counted, logged)
// and closes the connection. A connection without TLS has nothing to do.
func (c *Conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	_ = tc.SetDeadline(time.Now().Add(c.s.cfg.readTimeout))
	if err := tc.HandshakeContext(c.ctx); err != nil {
		c.s.refusals.refuse(c.remote, refuseTLSHandshake, zap.Error(err))
		return fmt.Errorf("%w: TLS handshake: %w", ErrBadRequest, err)
	}
	_ = tc.SetDeadline(time.Time{})
	if c.auth == nil {
		c.setPrincipal(tlsPrincipal(tc.ConnectionState()))
	}
	return nil
}

// dispatched runs on the reader once dispatch of s's request returned: an
// answer filled meanwhile did not wake the writer (see fill). With idle
// (no request buffered behind it), the reader writes whatever answers are
// ready itself, unless a write is under way; otherwise it wakes the
// writer if anything is ready. It reports false when its write failed (or
// hung up): the connection is closed, and the reader stops.
func (c *Conn) dispatched(s *slot, idle bool) bool {
	c.mu.Lock()
	s.inDispatch = false
	ready := len(c.queue) > 0 && c.queue[0].ready
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
		c.fail(err)
		return false
	}
	return true
}

// reserve gives r its place in the response order, waiting while too many
// requests are ahead of their responses. It reports false once closed.
func (c *Conn) reserve(r *Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && len(c.queue) >= c.s.cfg.maxInFlight {
		c.cond.Wait()
	}
	if c.closed {
		return false
	}
	r.slot = &slot{corr: r.corr, inDispatch: true}
	c.queue = append(c.queue, r.slot)
	return true
}

// fill records a request's answer, holding charge of the memory budget
// until written, and wakes the writer, unless the request is still being
// dispatched: the reader then sees the answer when dispatch returns
// (dispatched). An answer to a closed connection goes nowhere, and its
// charge back to the budget.
func (c *Conn) fill(s *slot, resp kmsg.Response, skip bool, charge *memCharge) {
	c.mu.Lock()
	s.resp, s.skip, s.ready, s.charge = resp, skip, true, charge
	closed, wake := c.closed, !s.inDispatch
	if closed {
		s.charge = nil // the writer is gone: nothing will write it
	}
	c.mu.Unlock()
	if closed {
		c.s.mem.releaseAll(charge)
	}
	if wake {
		c.cond.Broadcast()
	}
}

// writeBatch is how many bytes of encoded answers a writer gathers
// before it writes them, when more are ready.
const writeBatch = 64 << 10

// write is the writer goroutine: it waits until the answer at the head of
// the queue is ready and nobody is writing, then writes (writeReady).
func (c *Conn) write() {
	for {
		c.mu.Lock()
		for !c.closed && (c.writing || len(c.queue) == 0 || !c.queue[0].ready) {
			if c.draining && c.stopped && len(c.queue) == 0 && !c.writing {
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
			c.fail(err)
			return
		}
	}
}

// writeReady writes the answers ready at the head of the queue, in request
// order, and every answer that becomes ready at the head while it writes.
// It encodes them into a buffer taken from a pool and given back before it
// returns; a fetch's records stay counted in the memory budget until
// written. It clears writing when nothing more is ready, after its last
// write, so that no later answer can be written before the ones it holds.
// An error is a failed write, or errHangUp.
//
// byReader: the reader calls it, so no reader can be waiting for room in
// the queue, and it wakes nobody: a wake-up would only rouse the writer
// goroutine, which has nothing to do (whatever is ready when writing ends
// was written; what is filled later wakes it then).
//
// REQUIRES: the caller set writing (under mu), and does not hold mu.
func (c *Conn) writeReady(byReader bool) error {
	var (
		out     = getOutBuffer() // encoded answers not written yet
		charges []*memCharge     // the budget held by the answers in out
		written []func()         // their OnWritten callbacks
	)
	defer putOutBuffer(out)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := c.nc.Write(out)
		out = out[:0]
		for _, ch := range charges {
			c.s.mem.releaseAll(ch)
		}
		charges = charges[:0]
		if err == nil {
			for _, f := range written {
				f()
			}
		}
		written = written[:0]
		return err
	}
	for {
		c.mu.Lock()
		if c.closed || len(c.queue) == 0 || !c.queue[0].ready {
			if len(out) > 0 {
				// Nothing ready: send what is gathered, then look again.
				c.mu.Unlock()
				if err := flush(); err != nil {
					return err
				}
				continue
			}
			c.writing = false
			c.mu.Unlock()
			return nil
		}
		s := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.armIdleLocked() // the last answer owed: idle time starts
		}
		c.mu.Unlock()
		if !byReader {
			c.cond.Broadcast() // the reader may wait for room
		}

		if s.skip {
			if s.hangUp {
				// Everything owed before it is written: now close, as
				// Kafka does after a failed acks=0 produce.
				_ = flush() // a failure only means the client went first
				return errHangUp
			}
			continue
		}
		start := len(out)
		out = append(out, 0, 0, 0, 0, 0, 0, 0, 0) // size, correlation id
		if s.resp.IsFlexible() && kmsg.Key(s.resp.Key()) != kmsg.ApiVersions {
			out = append(out, 0) // the response header's empty tag section
		}
		out = s.resp.AppendTo(out)
		binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
		binary.BigEndian.PutUint32(out[start+4:], uint32(s.corr))
		if s.charge != nil {
			charges = append(charges, s.charge)
		}
		if s.written != nil {
			written = append(written, s.written)
		}
		if s.hangUp {
			// An answer that ends the connection (a failed
			// authentication's): written, then closed.
			_ = flush()
			return errHangUp
		}
		if len(out) >= writeBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// outBuffers pools the writers' buffers. Buffers grown past maxPooledOut
// by a large answer are left to the collector.
var outBuffers = sync.Pool{New: func() any { b := make([]byte, 0, writeBatch+4<<10); return &b }}

const maxPooledOut = 1 << 20

func getOutBuffer() []byte { return (*outBuffers.Get().(*[]byte))[:0] }

func putOutBuffer(b []byte) {
	if b != nil && cap(b) <= maxPooledOut {
		outBuffers.Put(&b)
	}
}

// releaseQueued gives back the memory held by answers that will never be
// written: the connection is closed.
func (c *Conn) releaseQueued() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.queue {
		if s != nil {
			c.s.mem.releaseAll(s.charge)
			s.charge = nil
		}
	}
}

// fail closes the connection after a write error, or to hang up. It marks
// the connection closed first: the writer is gone, so a reader waiting in
// reserve for room in the queue would otherwise wait forever.
func (c *Conn) fail(err error) {
	c.s.log.Debug("write failed", zap.Stringer("client", c.remote), zap.Error(err))
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cond.Broadcast()
	c.stopReading()
	_ = c.nc.Close()
}

// errHangUp is why the writer closes a connection on a hang-up slot.
var errHangUp = errors.New("hanging up")

// hangUp marks s answered without a response, and the connection to be
// closed once the answers before s are written.
func (c *Conn) hangUp(s *slot) {
	c.mu.Lock()
	s.skip, s.hangUp, s.ready = true, true, true
	c.mu.Unlock()
	c.cond.Broadcast()
}

// closeAfter marks s's answer, when filled, as the last: the connection is
// closed once it is written.
func (c *Conn) closeAfter(s *slot) {
	c.mu.Lock()
	s.hangUp = true
	c.mu.Unlock()
}

// shutdown closes the socket, stops the writer and cancels the
// connection's context, which answers every operation still waiting for
// this connection (the answers go nowhere: the writer has stopped), so no
// purgatory keeps it.
func (c *Conn) shutdown() {
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
func (c *Conn) armIdleLocked() {
	d := c.s.cfg.idleTimeout
	switch {
	case d <= 0 || c.draining || c.inFrame:
		// A frame begun keeps its own deadline (armFrameDeadline).
	case len(c.queue) == 0:
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	default:
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// stopForDrain stops the reader for the server's drain: its next read
// ends at once (a deadline in the past), and so do its waits for memory
// or a decode slot. The writer goes on until everything owed is written.
func (c *Conn) stopForDrain() {
	c.mu.Lock()
	c.draining = true
	_ = c.nc.SetReadDeadline(time.Now()) // the reader stops at its next read
	c.mu.Unlock()
	c.stopReading() // or in its wait for memory or a decode slot
	c.cond.Broadcast()
}

// awaitDrained waits until every answer owed has been written and the
// connection served, or ctx ends, when it closes the socket under the
// writer.
func (c *Conn) awaitDrained(ctx context.Context) {
	select {
	case <-c.served:
	case <-ctx.Done():
		_ = c.nc.Close()
		<-c.served
	}
}
