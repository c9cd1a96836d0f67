package storage

import "io"

// A window is what the record walk reads from: the batch's bytes in place
// (uncompressed records: one chunk, no source), or a decompressed stream
// in chunks, each a pooled buffer's worth of bytes (gzip, lz4, zstd) or a
// decoded snappy block, read only once the previous chunk is used up. A
// record that lies whole in the chunk is checked in place, a plain slice
// walk (parseRecord); one that straddles two chunks, or is longer than a
// chunk, is read a byte at a time across them (recordWalker), which holds
// nothing but the chunk whatever the record's size.
type window struct {
	b   []byte      // the chunk's bytes not yet walked
	src chunkSource // where the next chunk comes from; nil: b is all
	err error       // why src gave no more: io.EOF at its end
}

// A chunkSource yields a stream's bytes a chunk at a time; a chunk is
// valid until the next call. At the end it returns io.EOF, or the error
// that stopped the stream, with no bytes.
type chunkSource interface {
	next() ([]byte, error)
}

// more makes sure b holds a byte, reading the next chunk if it must, and
// reports whether it does: false at the stream's end or its error (err).
func (w *window) more() bool {
	for len(w.b) == 0 {
		if w.src == nil || w.err != nil {
			return false
		}
		w.b, w.err = w.src.next()
	}
	return true
}

// endErr returns why the bytes ran out: io.EOF, or the stream's error.
func (w *window) endErr() error {
	if w.err != nil {
		return w.err
	}
	return io.EOF
}

// ReadByte reads the next byte, across chunks.
func (w *window) ReadByte() (byte, error) {
	if len(w.b) == 0 && !w.more() {
		return 0, w.endErr()
	}
	c := w.b[0]
	w.b = w.b[1:]
	return c, nil
}

// Discard skips n bytes, across chunks, and returns how many it skipped.
func (w *window) Discard(n int) (int, error) {
	done := 0
	for done < n {
		if !w.more() {
			return done, w.endErr()
		}
		k := min(n-done, len(w.b))
		w.b = w.b[k:]
		done += k
	}
	return done, nil
}

// readerChunks reads an io.Reader (a decompressor) in chunks of buf's
// size.
type readerChunks struct {
	r   io.Reader
	buf []byte
	err error // the reader's error (io.EOF at its end), returned after its last bytes
}

// next fills buf from the reader, up to its error: a decompressor's
// io.ErrUnexpectedEOF (a stream cut short) is an error like any, not an
// end (io.ReadAtLeast would blur the two).
func (c *readerChunks) next() ([]byte, error) {
	n := 0
	for empty := 0; n < len(c.buf) && c.err == nil; {
		m, err := c.r.Read(c.buf[n:])
		n, c.err = n+m, err
		if m > 0 {
			empty = 0
		} else if empty++; empty == 100 { // as bufio gives up
			c.err = io.ErrNoProgress
		}
	}
	if n > 0 {
		return c.buf[:n], nil // and the error, if any, next time
	}
	return nil, c.err
}
