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
// allocates it before decoding anything. Producers compress batches of at
// most max.message.bytes, and their encoders shrink the window to the
// input (franz-go uses 64 KiB): 8 MiB is far above what they use.
const zstdMaxWindow = 8 << 20

// errInflatedTooLarge is wrapped by inflate when a batch's records
// decompress past the bound.
var errInflatedTooLarge = errors.New("records decompress past the bound")

// inflate decompresses src, the records of a batch compressed with codec,
// appending them to dst, and fails with an error wrapping
// errInflatedTooLarge as soon as more than bound bytes come out: a
// decompression bomb is refused without being inflated past the bound.
// Snappy's sizes are read before anything is decoded; gzip, lz4 and zstd
// are streamed, at most bound+1 bytes read. Any other failure means the
// payload is not what its codec says.
func inflate(dst, src []byte, codec int, bound int) ([]byte, error) {
	switch codec {
	case codecGzip:
		r := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(r)
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			return dst, err
		}
		return readBounded(dst, r, bound)
	case codecLz4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		return readBounded(dst, r, bound)
	case codecZstd:
		d, err := zstdDecoder()
		if err != nil {
			return dst, err
		}
		defer zstdDecoders.Put(d)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return dst, err
		}
		defer func() { _ = d.Reset(nil) }() // let go of src
		return readBounded(dst, d, bound)
	case codecSnappy:
		return inflateSnappy(dst, src, bound)
	}
	return dst, fmt.Errorf("unknown compression codec %d", codec)
}

// readBounded appends to dst what r yields, failing once it passes bound.
func readBounded(dst []byte, r io.Reader, bound int) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)] // grow
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > bound {
			return dst, fmt.Errorf("%w of %d bytes", errInflatedTooLarge, bound)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// xerialHeader starts snappy payloads in the xerial framing that Kafka's
// Java producer writes (snappy-java's SnappyOutputStream): the magic, then
// two int32 versions; then blocks, each an int32 length and a raw snappy
// block. Other producers send one raw block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// inflateSnappy decodes a raw snappy block or xerial-framed blocks. Every
// block's decoded size is read from its header, and the sum checked
// against bound, before anything is decoded. Blocks are decoded strictly,
// as Java's snappy-java does: a block using s2's extensions, which Go's s2
// decoder would take, is refused, since Java consumers could not read it.
func inflateSnappy(dst, src []byte, bound int) ([]byte, error) {
	var blocks [][]byte
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		for rest := src[xerialHeaderSize:]; len(rest) > 0; {
			if len(rest) < 4 {
				return dst, errors.New("xerial framing: a block length cut short")
			}
			n := binary.BigEndian.Uint32(rest)
			rest = rest[4:]
			if uint64(n) > uint64(len(rest)) {
				return dst, fmt.Errorf("xerial framing: a block of %d bytes with %d left", n, len(rest))
			}
			blocks, rest = append(blocks, rest[:n]), rest[n:]
		}
	} else {
		blocks = [][]byte{src}
	}
	total := 0
	for _, b := range blocks {
		n, err := snappy.DecodedLen(b)
		if err != nil {
			return dst, err
		}
		if total += n; total > bound {
			return dst, fmt.Errorf("%w of %d bytes", errInflatedTooLarge, bound)
		}
	}
	dst = grow(dst, total)
	for _, b := range blocks {
		n, _ := snappy.DecodedLen(b)
		at := len(dst)
		into := dst[at : at+n]
		out, err := snappy.DecodeStrict(into, b)
		if err != nil {
			return dst, err
		}
		if len(out) != n {
			return dst, errors.New("snappy block decoded to other than its size")
		}
		if n > 0 && &out[0] != &into[0] {
			copy(into, out)
		}
		dst = dst[:at+n]
	}
	return dst, nil
}

// grow returns dst with room for n more bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// Decoders are pooled: a zstd decoder costs allocations to make, and gzip
// and lz4 readers keep buffers worth reusing.
var (
	gzipReaders  = sync.Pool{New: func() any { return new(gzip.Reader) }}
	lz4Readers   = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdDecoders sync.Pool
)

// zstdDecoder returns a pooled decoder, or a new one: synchronous (no
// goroutines of its own), low on memory, its window bounded.
func zstdDecoder() (*zstd.Decoder, error) {
	if d, ok := zstdDecoders.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow))
}
