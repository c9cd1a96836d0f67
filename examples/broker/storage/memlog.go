package storage

import (
	"fmt"
	"slices"
	"sort"
)

// memLog is the in-memory Log: a slice of batches in offset order.
// Finding an offset is a binary search; dropping a prefix is O(batches
// dropped) and lets their bytes go at once.
type memLog struct {
	batches []*Batch // oldest first; batches[i].info.BaseOffset > previous LastOffset (gaps: the cleaner's)
	start   int64    // the log start offset: batches[0]'s base, or end when empty
	end     int64
	size    int64
}

// NewMemLog returns an empty in-memory log whose offsets start at 0; it is
// the default LogOpener's log.
func NewMemLog() Log { return &memLog{} }

func (l *memLog) Append(b *Batch) error {
	if b.info.BaseOffset < l.end {
		return fmt.Errorf("storage: batch at offset %d appended to a log ending at %d", b.info.BaseOffset, l.end)
	}
	l.batches = append(l.batches, b)
	l.end = b.info.LastOffset + 1
	l.size += int64(b.info.Size)
	return nil
}

// find returns the index of the batch holding offset, or of the first batch
// after it, or len(l.batches). O(log batches).
func (l *memLog) find(offset int64) int {
	return sort.Search(len(l.batches), func(i int) bool { return l.batches[i].info.LastOffset >= offset })
}

func (l *memLog) Read(dst []byte, offset, limit int64, maxBytes int, minOne bool) ([]byte, error) {
	read := 0
	for _, b := range l.batches[l.find(offset):] {
		if b.info.LastOffset >= limit {
			break
		}
		if read+b.info.Size > maxBytes && !(minOne && read == 0) {
			break
		}
		dst = append(dst, b.raw...)
		read += b.info.Size
	}
	return dst, nil
}

func (l *memLog) Scan(offset int64, fn func(BatchInfo) bool) error {
	for _, b := range l.batches[l.find(offset):] {
		if !fn(b.info) {
			break
		}
	}
	return nil
}

func (l *memLog) Segments(fn func(Segment) bool) error {
	for _, b := range l.batches {
		s := Segment{BaseOffset: b.info.BaseOffset, NextOffset: b.info.LastOffset + 1,
			Size: int64(b.info.Size), MaxTime: b.info.retentionTime()}
		if !fn(s) {
			break
		}
	}
	return nil
}

// DropBefore deletes the batches that end before offset: each batch is a
// segment, so an offset inside a batch keeps that batch and the start
// stays at its base.
func (l *memLog) DropBefore(offset int64) error {
	if offset > l.end {
		return fmt.Errorf("storage: drop before %d in a log ending at %d", offset, l.end)
	}
	if offset <= l.start {
		return nil
	}
	i := l.find(offset) // the first batch ending at or after offset
	for _, b := range l.batches[:i] {
		l.size -= int64(b.info.Size)
	}
	// Clear the dropped slots so their bytes are freed now, not when the
	// backing array is next reallocated.
	clear(l.batches[:i])
	l.batches = l.batches[i:]
	l.start = l.end
	if len(l.batches) > 0 {
		l.start = l.batches[0].info.BaseOffset
	}
	return nil
}

// Replace swaps the batch seg is (every batch is a segment here) for
// kept, which holds it cleaned or nothing. The start offset stays, even
// when the first batch goes. O(log batches + len(kept)), plus a copy of
// the batches after seg when kept is not one batch.
func (l *memLog) Replace(seg Segment, kept []*Batch) error {
	i := l.find(seg.BaseOffset)
	if i >= len(l.batches)-1 || l.batches[i].info.BaseOffset != seg.BaseOffset ||
		l.batches[i].info.LastOffset+1 != seg.NextOffset || int64(l.batches[i].info.Size) != seg.Size {
		return fmt.Errorf("%w: the batch at %d", ErrSegmentChanged, seg.BaseOffset)
	}
	for _, b := range kept {
		l.size += int64(b.info.Size)
	}
	l.size -= seg.Size
	if len(kept) == 1 {
		l.batches[i] = kept[0]
		return nil
	}
	l.batches = slices.Concat(l.batches[:i], kept, l.batches[i+1:])
	return nil
}

// TruncateTo deletes the batches from the one based at offset on. O(log
// batches + batches deleted).
func (l *memLog) TruncateTo(offset int64) error {
	if offset == l.end {
		return nil
	}
	if offset < l.start || offset > l.end {
		return fmt.Errorf("%w: truncate to %d a log holding %d to %d", ErrOffsetOutOfRange, offset, l.start, l.end)
	}
	i := l.find(offset) // offset < end: a batch holds it
	if b := l.batches[i].info; b.BaseOffset != offset {
		return fmt.Errorf("%w: truncate to %d, inside the batch at %d to %d", ErrNotBatchBoundary, offset, b.BaseOffset, b.LastOffset)
	}
	for _, b := range l.batches[i:] {
		l.size -= int64(b.info.Size)
	}
	// As in DropBefore: clear the slots cut, so that their bytes are
	// freed now, not when an append next overwrites them.
	clear(l.batches[i:])
	l.batches = l.batches[:i]
	l.end = offset
	return nil
}

// Reset lets every batch go and starts the log afresh at start. O(batches).
func (l *memLog) Reset(start int64) error {
	if start < 0 {
		return fmt.Errorf("%w: reset to %d", ErrOffsetOutOfRange, start)
	}
	clear(l.batches)
	l.batches = nil
	l.start, l.end, l.size = start, start, 0
	return nil
}

func (l *memLog) Bounds() Bounds { return Bounds{Start: l.start, End: l.end, Size: l.size} }

func (l *memLog) Close() error {
	clear(l.batches)
	l.batches = nil
	return nil
}

// Remove is Close: nothing of the memory log outlives it.
func (l *memLog) Remove() error { return l.Close() }
