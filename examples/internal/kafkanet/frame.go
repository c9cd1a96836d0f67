package kafkanet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// firstChunk is the first chunk a request body arrives into; each next
// chunk is twice the last, up to firstChunk << maxChunkShift.
const (
	firstChunk    = 4 << 10
	maxChunkShift = 8 // chunks of firstChunk << 8: 1 MiB
)

// chunkPools hold the chunks of each size, firstChunk << class: what a
// body arrives into is reused, frame after frame and connection after
// connection.
var chunkPools [maxChunkShift + 1]sync.Pool

// A chunk is one of the pooled buffers a body arrives into.
type chunk struct {
	buf   *[]byte
	class int
	n     int // bytes of it filled
}

func getChunk(class int) *[]byte {
	if p, _ := chunkPools[class].Get().(*[]byte); p != nil {
		return p
	}
	b := make([]byte, firstChunk<<class)
	return &b
}

// readFrame reads one request frame: its 4-byte size, then its body. The
// body is never allocated from the size alone: the bytes arrive into
// pooled chunks of 4 KiB, 8 KiB, ... up to 1 MiB each, every chunk taken
// from the memory budget first, so that a client claiming 100 MiB and
// sending 10 bytes costs 4 KiB, and a budget spent stops the reading (see
// memBudget). Once the last byte is in, the body is allocated at its size
// and the chunks are copied into it, each byte once, and go back to their
// pools; a frame already in the reader's buffer is read straight into its
// body. A client that has sent a first chunk's worth and has more to send
// is read through the connection's big buffer (connReader), charged to the
// frame while it is read: one read takes up to 64 KiB, the rest of the
// frame and the frames behind it. The body is the request's own, exactly
// its size and never reused: what a handler keeps of it (a produce's
// batches, which the log stores) stays valid. Waiting for the first byte
// is idleness (connections.max.idle.ms); once a frame has begun, a client
// that sends nothing for socket.read.timeout.ms is closed
// (refuseSlowRequest). It returns the body and what it holds of the budget
// (its size), which the caller releases.
func (c *Conn) readFrame(br *connReader) ([]byte, *memCharge, error) {
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
	if n < 8 || n > c.maxFrame() {
		c.s.refusals.refuse(c.remote, refuseRequestTooLarge, zap.Int32("size", n))
		return nil, nil, fmt.Errorf("%w: request of %d bytes (socket.request.max.bytes, or sasl.server.max.receive.size before authenticating, is %d)", ErrBadRequest, n, c.maxFrame())
	}
	charge := &memCharge{}
	if int(n) <= br.Buffered() {
		// The whole frame has arrived: read it into its body at once.
		if err := c.s.mem.grow(charge, int64(n), c.quit); err != nil {
			return nil, nil, errStopReading
		}
		body := make([]byte, n)
		_, _ = io.ReadFull(br, body) // buffered: it cannot fail
		return body, charge, nil
	}
	chunks, err := c.readChunks(br, int(n), charge)
	defer func() {
		for _, ch := range chunks {
			chunkPools[ch.class].Put(ch.buf)
		}
		clear(chunks) // the pool's now: not kept from the collector
		c.chunks = chunks[:0]
	}()
	if err != nil {
		c.s.mem.releaseAll(charge)
		return nil, nil, err
	}
	body := make([]byte, 0, n)
	for _, ch := range chunks {
		body = append(body, (*ch.buf)[:ch.n]...)
	}
	c.s.mem.release(charge, charge.n-int64(n)) // the chunks go back; the body stays
	return body, charge, nil
}

// readChunks reads n bytes into chunks, charging each to charge before it
// is taken, and returns them (c.chunks' storage), with the error that
// stopped it: errStopReading for a wait for memory given up.
func (c *Conn) readChunks(br *connReader, n int, charge *memCharge) ([]chunk, error) {
	chunks := c.chunks[:0]
	last := time.Now() // the frame's last sign of life; readFrame armed the deadline
	if br.holdsBig() {
		// Held since frames before this one: the frame holds it now.
		c.s.mem.force(charge, bigReadBuffer)
	}
	for got := 0; got < n; {
		class := min(len(chunks), maxChunkShift)
		if err := c.s.mem.grow(charge, firstChunk<<class, c.quit); err != nil {
			return chunks, errStopReading
		}
		last = time.Now() // a wait for memory is not the client's stall
		chunks = append(chunks, chunk{buf: getChunk(class), class: class})
		ch := &chunks[len(chunks)-1]
		want := min(len(*ch.buf), n-got)
		for ch.n < want {
			m, err := br.Read((*ch.buf)[ch.n:want])
			ch.n += m
			if m > 0 {
				last = time.Now()
			}
			if err != nil && !c.rearm(err, last) {
				return chunks, c.frameError(err)
			}
			if got+ch.n >= firstChunk && ch.n < want {
				c.toBigReader(br, charge)
			}
		}
		got += ch.n
	}
	return chunks, nil
}

// toBigReader moves br to its big buffer, charged to the frame being
// read, if it can and the budget has room for it at once: readChunks
// calls it once the client has sent a first chunk's worth of the frame,
// with more to come.
func (c *Conn) toBigReader(br *connReader, charge *memCharge) {
	if !br.canGrow() {
		return
	}
	if got := c.s.mem.take(charge, bigReadBuffer); got < bigReadBuffer {
		c.s.mem.release(charge, got)
		return
	}
	br.toBig()
}

// rearm is called when a read mid-frame failed with err: if it is the
// read deadline, and the client sent something within
// socket.read.timeout.ms of now (last), it moves the deadline to that
// long after last and reports true: the reading goes on. So the deadline
// is set once a frame, and moved only when it passes, not at every read
// (a system call and the connection's lock, 6% of a produce's CPU),
// while a client is still closed after exactly socket.read.timeout.ms of
// silence. While draining, the drain's deadline stands.
func (c *Conn) rearm(err error, last time.Time) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	deadline := last.Add(c.s.cfg.readTimeout)
	if !time.Now().Before(deadline) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	_ = c.nc.SetReadDeadline(deadline)
	return true
}

// armFrameDeadline gives the client socket.read.timeout.ms to send its next
// bytes of a frame it has begun, unless the server is draining the
// connection (drain's deadline stands).
func (c *Conn) armFrameDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFrame = true // until the reader waits for its next frame
	if !c.draining {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.readTimeout))
	}
}

// errSlowRequest is why a connection stalled mid-frame is closed.
var errSlowRequest = errors.New("request stalled")

// frameError returns err, read mid-frame, as the reader reports it: a
// deadline passed while not draining is a client that stalled; while
// draining, the drain's deadline (errStopReading: the reader stops).
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
	return fmt.Errorf("%w: nothing for %v in the middle of a request", errSlowRequest, c.s.cfg.readTimeout)
}
