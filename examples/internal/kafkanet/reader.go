package kafkanet

import (
	"bufio"
	"net"
	"sync"
)

// The read buffers of a connection: a small one that sits with it, idle
// or not, and a big one, pooled, that it holds only while a client sends
// faster than the small one takes: one read system call then takes the
// rest of a large request and the requests after it (a pipelining
// producer's), where the small buffer took 4 KiB a call.
const (
	smallReadBuffer = 4 << 10
	bigReadBuffer   = 64 << 10
)

var bigReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bigReadBuffer) }}

// connReader is a connection's read side: its small buffered reader, or,
// while it holds one, its big one. Used by the connection's reader alone.
type connReader struct {
	nc    net.Conn
	small *bufio.Reader
	big   *bufio.Reader // from bigReaders while held; nil otherwise
}

func newConnReader(nc net.Conn) *connReader {
	return &connReader{nc: nc, small: bufio.NewReaderSize(nc, smallReadBuffer)}
}

func (r *connReader) cur() *bufio.Reader {
	if r.big != nil {
		return r.big
	}
	return r.small
}

func (r *connReader) ReadByte() (byte, error)    { return r.cur().ReadByte() }
func (r *connReader) Read(p []byte) (int, error) { return r.cur().Read(p) }

// Buffered returns how many bytes have been read from the socket and not
// yet taken.
func (r *connReader) Buffered() int { return r.cur().Buffered() }

// holdsBig reports whether the big buffer is held.
func (r *connReader) holdsBig() bool { return r.big != nil }

// canGrow reports whether toBig would move to the big buffer: none is
// held, and the small one is empty (what it holds is taken first).
func (r *connReader) canGrow() bool { return r.big == nil && r.small.Buffered() == 0 }

// toBig moves to the big buffer. REQUIRES: canGrow.
func (r *connReader) toBig() {
	r.big = bigReaders.Get().(*bufio.Reader)
	r.big.Reset(r.nc)
}

// shrink gives the big buffer back once it holds nothing: the reader calls
// it before it waits for a request, so that an idle connection holds its
// small buffer alone.
func (r *connReader) shrink() {
	if r.big != nil && r.big.Buffered() == 0 {
		r.release()
	}
}

// release gives the big buffer back whatever it holds: the reader is done.
func (r *connReader) release() {
	if r.big != nil {
		r.big.Reset(nil)
		bigReaders.Put(r.big)
		r.big = nil
	}
}
