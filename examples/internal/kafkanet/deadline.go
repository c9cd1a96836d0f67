package kafkanet

import (
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
)

// A request's deadline (socket.read.timeout.ms) runs from its first byte
// until its last: the whole frame must arrive within it, however steadily
// its bytes come. A client that sends a byte every few seconds is closed
// at the deadline, as one that stops is, so that no request half sent can
// hold its memory, and its host's share, for longer.
//
// What the server spends not reading is not the client's time: a reader
// waiting for memory (the budget, or its host's share) moves its frame's
// deadline by as long as it waited. The socket's deadline is set once a
// frame, at its first byte (armFrameDeadline), and moved only when it
// passes early because of such a wait (rearm), not at every read (a
// system call and the connection's lock, 6% of a produce's CPU).

// errSlowRequest is why a connection whose request did not arrive by its
// deadline is closed.
var errSlowRequest = errors.New("request too slow")

// armFrameDeadline gives the client socket.read.timeout.ms to send the
// whole frame it has begun, unless the server is draining the connection
// (drain's deadline stands).
func (c *Conn) armFrameDeadline() {
	c.frameDeadline = time.Now().Add(c.s.cfg.readTimeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFrame = true // until the reader waits for its next frame
	if !c.draining {
		_ = c.nc.SetReadDeadline(c.frameDeadline)
	}
}

// grow is the reader's grow of charge by n in the memory budget: a wait
// is counted, logged (waitingForMemory) and kept off the frame's deadline.
func (c *Conn) grow(charge *memCharge, n int64) error {
	err := c.s.mem.grow(charge, n, c.quit, c.memWait)
	c.waited()
	return err
}

// acquireShare counts a body of n bytes to be read in its host's share,
// as grow does its bytes in the budget.
func (c *Conn) acquireShare(n int64) error {
	err := c.s.shares.acquire(c.host, n, c.quit, c.shareWait)
	c.waited()
	return err
}

// waitingForMemory returns the reader's callbacks for a wait for the
// budget and for its host's share: each counts and logs that the reader
// stopped (at most once a minute per client host and reason, as the
// refusals are), and notes when, for waited. Made once per connection;
// called on the reader's goroutine, without the budget's or the shares'
// lock.
func (c *Conn) waitingForMemory() (memWait, shareWait func()) {
	memWait = func() {
		c.waitStart = time.Now()
		c.s.refusals.refuse(c.remote, refuseMemoryWait, zap.Int64("queued_bytes", c.s.mem.inUse()),
			zap.Int64("queued.max.request.bytes", c.s.mem.limit))
	}
	shareWait = func() {
		c.waitStart = time.Now()
		c.s.refusals.refuse(c.remote, refuseHostShareWait, zap.Int64("queued.max.request.bytes.per.ip", c.s.shares.limit))
	}
	return memWait, shareWait
}

// waited moves the frame's deadline by the wait that just ended, if the
// reader waited.
func (c *Conn) waited() {
	if !c.waitStart.IsZero() {
		c.frameDeadline = c.frameDeadline.Add(time.Since(c.waitStart))
		c.waitStart = time.Time{}
	}
}

// rearm is called when a read mid-frame failed with err: if it is the
// socket's deadline, passed before the frame's (a wait for memory moved
// the frame's), it moves the socket's there and reports true: the reading
// goes on. While draining, the drain's deadline stands.
func (c *Conn) rearm(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(c.frameDeadline) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	_ = c.nc.SetReadDeadline(c.frameDeadline)
	return true
}

// frameError returns err, read mid-frame, as the reader reports it: a
// deadline passed while not draining is a request too slow, counted and
// logged; while draining, the drain's deadline (errStopReading: the
// reader stops).
func (c *Conn) frameError(err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	c.mu.Lock()
	draining := c.draining
	c.mu.Unlock()
	if draining {
		return errStopReading
	}
	c.s.refusals.refuse(c.remote, refuseSlowRequest, zap.Duration("socket.read.timeout", c.s.cfg.readTimeout))
	return fmt.Errorf("%w: not whole %v after its first byte", errSlowRequest, c.s.cfg.readTimeout)
}
