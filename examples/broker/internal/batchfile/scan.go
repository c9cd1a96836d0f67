package batchfile

import (
	"errors"
	"fmt"
	"io"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// A Batch is one whole, valid batch read from a file.
type Batch struct {
	Pos  int64             // where it starts in the file
	Info storage.BatchInfo // its header, AppendTime zero
	Raw  []byte            // its bytes, valid only until fn returns
}

// A Tear is a torn tail: from Pos to the end of the file there is no whole,
// valid batch.
type Tear struct {
	Pos    int64 // where the tail starts: the length of the whole batches
	Reason error // why the batch at Pos is not whole and valid
}

func (t *Tear) Error() string { return fmt.Sprintf("torn tail at position %d: %v", t.Pos, t.Reason) }

// Scan reads the batches of r, a file of size bytes, from position pos,
// expecting the first to have a base offset of at least next (any, if
// next is negative) and each other to start after the one before it ends
// (right after it, unless the log cleaner left a gap). It calls fn with every whole,
// valid batch in order; an error from fn stops it and is returned.
//
// At a batch that is not whole and valid, Scan returns a *Tear if what
// remains is a torn tail, or an error wrapping storage.ErrCorruptBatch that
// names the position and the offset expected if a valid batch follows (see
// the package doc). A nil *Tear and a nil error mean every byte from pos
// on is a whole, valid batch. I/O errors are returned as they are. Reads
// are sequential, one header and one body per batch. O(size - pos).
func Scan(r io.ReaderAt, size, pos, next int64, fn func(Batch) error) (*Tear, error) {
	buf := make([]byte, 0, 64<<10)
	for pos < size {
		b, err := readBatch(r, size, pos, next, buf)
		if err != nil {
			if !errors.Is(err, storage.ErrCorruptBatch) {
				return nil, err
			}
			return badBatch(r, size, pos, next, err)
		}
		buf = b.Raw[:0]
		if err := fn(b); err != nil {
			return nil, err
		}
		pos += int64(len(b.Raw))
		next = b.Info.LastOffset + 1
	}
	return nil, nil
}

// readBatch reads the batch at pos into buf and checks it: an error
// wrapping storage.ErrCorruptBatch if it is not whole and valid, or an I/O
// error.
func readBatch(r io.ReaderAt, size, pos, next int64, buf []byte) (Batch, error) {
	left := size - pos
	if left < storage.BatchHeaderSize {
		return Batch{}, fmt.Errorf("%w: %d bytes, shorter than a batch header", storage.ErrCorruptBatch, left)
	}
	buf = buf[:storage.BatchHeaderSize]
	if err := readAt(r, buf, pos); err != nil {
		return Batch{}, err
	}
	info, err := storage.ReadBatchHeader(buf)
	if err != nil {
		return Batch{}, err
	}
	if int64(info.Size) > left {
		return Batch{}, fmt.Errorf("%w: a batch of %d bytes with %d left in the file", storage.ErrCorruptBatch, info.Size, left)
	}
	// Past next is a gap the log cleaner left (a compacted log's batches
	// keep their offsets); before it, no batch of a log can be.
	if next >= 0 && info.BaseOffset < next {
		return Batch{}, fmt.Errorf("%w: base offset %d where at least %d was due", storage.ErrCorruptBatch, info.BaseOffset, next)
	}
	buf = grow(buf, info.Size)
	if err := readAt(r, buf[storage.BatchHeaderSize:], pos+storage.BatchHeaderSize); err != nil {
		return Batch{}, err
	}
	stored, err := storage.ParseStoredBatch(buf)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Pos: pos, Info: stored.Info(), Raw: buf}, nil
}

// grow returns buf resliced, or reallocated, to n bytes, keeping its
// contents.
func grow(buf []byte, n int) []byte {
	if cap(buf) >= n {
		return buf[:n]
	}
	out := make([]byte, n, max(n, 2*cap(buf)))
	copy(out, buf)
	return out
}

// badBatch decides what the bad batch at pos is: the start of a torn tail,
// or corruption because a valid batch follows it.
func badBatch(r io.ReaderAt, size, pos, next int64, reason error) (*Tear, error) {
	at, found, err := resync(r, size, pos+1, next)
	if err != nil {
		return nil, err
	}
	if !found {
		return &Tear{Pos: pos, Reason: reason}, nil
	}
	want := "any offset"
	if next >= 0 {
		want = fmt.Sprintf("offset %d", next)
	}
	return nil, fmt.Errorf("position %d (%s): %w, yet a whole batch follows at position %d", pos, want, reason, at)
}

// resync looks for a whole, valid batch starting at or after from with a
// base offset of at least next. It reads the rest of the file in chunks
// and tries only the positions whose magic byte is 2, so it runs at about
// memory speed over garbage or zeros.
func resync(r io.ReaderAt, size, from, next int64) (int64, bool, error) {
	const chunk = 1 << 20
	const magicAt = 16
	buf := make([]byte, chunk+storage.BatchHeaderSize)
	var body []byte
	for start := from; start+storage.BatchHeaderSize <= size; start += chunk {
		n := min(int64(len(buf)), size-start)
		if err := readAt(r, buf[:n], start); err != nil {
			return 0, false, err
		}
		for i := int64(0); i < chunk && i+storage.BatchHeaderSize <= n; i++ {
			if buf[i+magicAt] != 2 {
				continue
			}
			info, err := storage.ReadBatchHeader(buf[i:])
			if err != nil || info.BaseOffset < next || int64(info.Size) > size-(start+i) {
				continue
			}
			body = grow(body[:0], info.Size)
			if err := readAt(r, body, start+i); err != nil {
				return 0, false, err
			}
			if _, err := storage.ParseStoredBatch(body); err == nil {
				return start + i, true, nil
			}
		}
	}
	return 0, false, nil
}

// readAt fills buf from r at off. Every read stays within the size the
// caller was given, so a short read is an error: the file shrank under it.
func readAt(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil // io.ReaderAt may report io.EOF with a full read at the end
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
