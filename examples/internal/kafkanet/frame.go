package kafkanet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
)

// firstChunk is the buffer a request body starts in; it doubles as bytes
// arrive, up to the frame's size.
const firstChunk = 4 << 10

// readFrame reads one request frame: its 4-byte size, then its body. The
// body's buffer is never sized from the size alone: it starts at
// firstChunk and doubles as the bytes arrive, each growth taken from the
// memory budget first, so that a client claiming 100 MiB and sending 10
// bytes costs 4 KiB, and a budget spent stops the reading (see memBudget).
// Waiting for the first byte is idleness (connections.max.idle.ms); once
// a frame has begun, a client that sends nothing for socket.read.timeout.ms
// is closed (refuseSlowRequest). It returns the body and what it holds of
// the budget, which the caller releases.
func (c *Conn) readFrame(br *bufio.Reader) ([]byte, *memCharge, error) {
	first, err := br.ReadByte()
	if err != nil {
		return nil, nil, err
	}
	var size [4]byte
	size[0] = first
	c.armFrameDeadline()
	if _, err := io.ReadFull(br, size[1:]); err != nil {
		return nil, nil, c.frameError(err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 8 || n > c.s.cfg.requestMaxBytes {
		c.s.refusals.refuse(c.remote, refuseRequestTooLarge, zap.Int32("size", n))
		return nil, nil, fmt.Errorf("%w: request of %d bytes (socket.request.max.bytes is %d)", ErrBadRequest, n, c.s.cfg.requestMaxBytes)
	}
	charge := &memCharge{}
	var body []byte
	for len(body) < int(n) {
		if len(body) == cap(body) {
			grown := min(int(n), max(firstChunk, 2*cap(body)))
			if err := c.s.mem.grow(charge, int64(grown-cap(body)), c.quit); err != nil {
				c.s.mem.releaseAll(charge)
				return nil, nil, errStopReading
			}
			grownBody := make([]byte, len(body), grown)
			copy(grownBody, body)
			body = grownBody
			c.armFrameDeadline() // a wait for memory is not the client's stall
		}
		m, err := br.Read(body[len(body):min(cap(body), int(n))])
		body = body[:len(body)+m]
		if err != nil {
			c.s.mem.releaseAll(charge)
			return nil, nil, c.frameError(err)
		}
		if m > 0 {
			c.armFrameDeadline()
		}
	}
	return body, charge, nil
}

// armFrameDeadline gives the client socket.read.timeout.ms to send its next
// bytes of a frame it has begun, unless the server is draining the
// connection (drain's deadline stands).
func (c *Conn) armFrameDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.draining {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.readTimeout))
	}
}

// errSlowRequest is why a connection stalled mid-frame is closed.
var errSlowRequest = errors.New("request stalled")

// frameError returns err, read mid-frame, as the reader reports it: a
// deadline passed while not draining is a client that stalled.
func (c *Conn) frameError(err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	c.mu.Lock()
	draining := c.draining
	c.mu.Unlock()
	if draining {
		return nil
	}
	c.s.refusals.refuse(c.remote, refuseSlowRequest, zap.Duration("socket.read.timeout", c.s.cfg.readTimeout))
	return fmt.Errorf("%w: nothing for %v in the middle of a request", errSlowRequest, c.s.cfg.readTimeout)
}
