package kafkanet

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

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
// batches, which the log stores) stays valid.
//
// A size past socket.request.max.bytes, or past the connection's or its
// host's share of the budget (WithMemoryShares), is refused before
// anything else is read. A body not in the buffer whole counts, at its
// size, in its host's share (hostShares) until it has arrived: a reader
// whose host has no room for it waits before it reads any of it.
//
// Waiting for the first byte is idleness (connections.max.idle.ms); from
// it, the frame must arrive whole within socket.read.timeout.ms, the time
// the reader waits for memory aside (deadline.go). It returns the body and
// what it holds of the budget (its size), which the caller releases.
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
	if err := c.checkShares(n); err != nil {
		return nil, nil, err
	}
	charge := &memCharge{}
	if int(n) <= br.Buffered() {
		// The whole frame has arrived: read it into its body at once. It
		// is not being read: no share of its host's to wait for.
		if err := c.grow(charge, int64(n)); err != nil {
			return nil, nil, errStopReading
		}
		body := make([]byte, n)
		_, _ = io.ReadFull(br, body) // buffered: it cannot fail
		return body, charge, nil
	}
	if err := c.acquireShare(int64(n)); err != nil {
		return nil, nil, errStopReading
	}
	// Arrived or given up, the body is no longer being read.
	defer c.s.shares.release(c.host, int64(n))
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

// checkShares refuses a request of n bytes that its connection, or its
// client's host, may never hold while it is read (WithMemoryShares): it
// counts and logs the refusal, and returns the error that closes the
// connection.
func (c *Conn) checkShares(n int32) error {
	perConn, perIP := c.s.connShare, c.s.shares.limit
	if int64(n) <= perConn && int64(n) <= perIP {
		return nil
	}
	name, share := "queued.max.request.bytes.per.connection", perConn
	if int64(n) <= perConn {
		name, share = "queued.max.request.bytes.per.ip", perIP
	}
	c.s.refusals.refuse(c.remote, refuseRequestOverShare, zap.Int32("size", n), zap.Int64(name, share))
	return fmt.Errorf("%w: request of %d bytes (%s is %d)", ErrBadRequest, n, name, share)
}

// readChunks reads n bytes into chunks, charging each to charge before it
// is taken, and returns them (c.chunks' storage), with the error that
// stopped it: errStopReading for a wait for memory given up.
func (c *Conn) readChunks(br *connReader, n int, charge *memCharge) ([]chunk, error) {
	chunks := c.chunks[:0]
	if br.holdsBig() {
		// Held since frames before this one: the frame holds it now.
		c.s.mem.force(charge, bigReadBuffer)
	}
	for got := 0; got < n; {
		class := min(len(chunks), maxChunkShift)
		if err := c.grow(charge, firstChunk<<class); err != nil {
			return chunks, errStopReading
		}
		chunks = append(chunks, chunk{buf: getChunk(class), class: class})
		ch := &chunks[len(chunks)-1]
		want := min(len(*ch.buf), n-got)
		for ch.n < want {
			m, err := br.Read((*ch.buf)[ch.n:want])
			ch.n += m
			if err != nil && !c.rearm(err) {
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
