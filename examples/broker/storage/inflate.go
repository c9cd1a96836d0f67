package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The compression codecs of a batch's attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
)

// zstdMaxWindow bounds the window a zstd frame may ask for: the decoder
// allocates it before decoding anything. Producers' encoders shrink the
// window to their input (franz-go uses 64 KiB): 8 MiB is far above what
// they use.
const zstdMaxWindow = 8 << 20

// snappyMaxRatio bounds what a raw snappy block may claim to decode to,
// against its size: the format's densest op, a three-byte copy of 64
// bytes, makes about 21 bytes of one. A block claiming more lies, and is
// refused before its buffer is allocated.
const snappyMaxRatio = 22

// errInflatedTooLarge is wrapped when a batch's records decompress past
// the bound.
var errInflatedTooLarge = errors.New("records decompress past the bound")

// chunkSize is the size of the chunks a compressed batch's records are
// inflated into (see window): records are checked in place within one.
const chunkSize = 32 << 10

// An inflater streams a compressed batch's records: the walk reads the
// records from it as they are decompressed, skipping keys and values
// without keeping them, so that validating a batch holds a few buffers,
// whatever it inflates to. Pooled, with its decoders.
type inflater struct {
	gz     gzip.Reader
	lz4    *lz4.Reader
	zstd   *zstd.Decoder
	snap   snappyReader
	src    bytes.Reader
	lim    io.LimitedReader
	chunks readerChunks
	win    window
}

var inflaters = sync.Pool{New: func() any {
	return &inflater{lz4: lz4.NewReader(nil), chunks: readerChunks{buf: make([]byte, chunkSize)}}
}}

// open returns a window on src, the records of a batch compressed with
// codec, that yields at most bound+1 bytes (more is errInflatedTooLarge,
// which the walk reports: see exceeded). It fails if src does not start
// as codec says.
func (in *inflater) open(src []byte, codec int, bound int) (*window, error) {
	in.lim = io.LimitedReader{N: int64(bound) + 1}
	in.src.Reset(src)
	var r io.Reader
	switch codec {
	case codecGzip:
		if err := in.gz.Reset(&in.src); err != nil {
			return nil, err
		}
		r = &in.gz
	case codecLz4:
		in.lz4.Reset(&in.src)
		r = in.lz4
	case codecZstd:
		if in.zstd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, err
			}
			in.zstd = d
		}
		if err := in.zstd.Reset(&in.src); err != nil {
			return nil, err
		}
		r = in.zstd
	case codecSnappy:
		// Decoded a block at a time, each block a chunk: the bound is
		// checked against the blocks' sizes, before any is decoded.
		if err := in.snap.reset(src, bound); err != nil {
			return nil, err
		}
		in.win = window{src: &in.snap}
		return &in.win, nil
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
	in.lim.R = r
	in.chunks.r, in.chunks.err = &in.lim, nil
	in.win = window{src: &in.chunks}
	return &in.win, nil
}

// exceeded reports whether the stream was cut at the bound: more than
// bound bytes came out.
func (in *inflater) exceeded() bool { return in.lim.N <= 0 }

// release lets go of the batch's bytes and puts in back in the pool.
func (in *inflater) release() {
	in.src.Reset(nil)
	in.chunks.r, in.chunks.err = nil, nil
	in.win = window{}
	if in.zstd != nil {
		_ = in.zstd.Reset(nil)
	}
	_ = in.snap.reset(nil, 0) // no input: no error
	if cap(in.snap.buf) > 1<<20 {
		in.snap.buf = nil // a large block's: not kept in the pool
	}
	in.lim.R = nil
	inflaters.Put(in)
}

// xerialMagic starts snappy payloads in the xerial framing that Kafka's
// Java producer writes (snappy-java's SnappyOutputStream): the magic, then
// two int32 versions; then blocks, each an int32 length and a raw snappy
// block. Other producers send one raw block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// snappyReader decodes a raw snappy block, or xerial-framed blocks one at
// a time. Every block's decoded size is read from its header, and checked
// against snappyMaxRatio and the bound (as a sum), before it is decoded.
// Blocks are decoded strictly, as Java's snappy-java does: one using s2's
// extensions, which Go's s2 decoder would take, is refused, since Java
// consumers could not read it.
type snappyReader struct {
	blocks [][]byte // what is left to decode
	buf    []byte   // the block decoded: the window's chunk, reused
}

func (r *snappyReader) reset(src []byte, bound int) error {
	r.blocks = r.blocks[:0]
	if src == nil {
		return nil
	}
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		for rest := src[xerialHeaderSize:]; len(rest) > 0; {
			if len(rest) < 4 {
				return errors.New("xerial framing: a block length cut short")
			}
			n := binary.BigEndian.Uint32(rest)
			rest = rest[4:]
			if uint64(n) > uint64(len(rest)) {
				return fmt.Errorf("xerial framing: a block of %d bytes with %d left", n, len(rest))
			}
			r.blocks, rest = append(r.blocks, rest[:n]), rest[n:]
		}
	} else {
		r.blocks = append(r.blocks, src)
	}
	total := 0
	for _, b := range r.blocks {
		n, err := snappy.DecodedLen(b)
		if err != nil {
			return err
		}
		if n > snappyMaxRatio*len(b)+64 {
			return fmt.Errorf("a snappy block of %d bytes claims %d", len(b), n)
		}
		if total += n; total > bound {
			return fmt.Errorf("%w of %d bytes", errInflatedTooLarge, bound)
		}
	}
	return nil
}

// next decodes the next block, into buf: a chunk of the window.
func (r *snappyReader) next() ([]byte, error) {
	if len(r.blocks) == 0 {
		return nil, io.EOF
	}
	b := r.blocks[0]
	r.blocks = r.blocks[1:]
	n, _ := snappy.DecodedLen(b) // checked by reset
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	out, err := snappy.DecodeStrict(r.buf[:n], b)
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, errors.New("snappy block decoded to other than its size")
	}
	return out, nil
}
