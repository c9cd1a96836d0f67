package logdir

import (
	"fmt"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Truncation cuts a log from its end, as a follower does when its log
// disagrees with its leader's; it is the only operation besides retention
// that deletes batches. Both TruncateTo and Reset are made of steps each of
// which leaves files that recovery opens as a consistent log, one whose
// segments follow each other without a gap, so that a crash at any point
// leaves a log that opens (see the package doc, # Truncation):
//
//  1. The segments after the one cut are deleted, newest first, each
//     deletion made durable (an fsync of the directory) before the next:
//     a crash leaves the old log without some of its last segments, a
//     prefix of it whose end is still at or past the offset truncated to.
//     Deleting oldest first, or without the fsyncs, could leave a later
//     segment whose predecessor is gone, a gap that recovery refuses.
//  2. The segment holding the offset is cut there, the .log then the
//     .index, each fsynced. A crash before the .log's cut is durable
//     leaves step 1's prefix; one after it, an index pointing past its
//     segment, which recovery rebuilds.
//
// So a crash leaves the truncation done, or undone but for whole segments
// from the end: the batches left are always a prefix of those before, and
// calling TruncateTo with the same offset after the restart finishes it.
// Reset is step 1 down to the first segment, step 2 at its base, and then
// the now empty first segment renamed to the new start (segment.rebase),
// one rename per file, each leaving one empty segment at the old base or at
// the new one.

// TruncateTo implements storage.Log: it deletes the segments after the one
// holding offset, newest first, and cuts that one at offset, which
// becomes the active segment, durably (see above). O(log segments + bytes
// scanned to find offset + batches kept in its segment), plus two fsyncs
// and one per segment deleted.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	start, end := l.segs[0].base, l.endLocked()
	if offset == end {
		return nil
	}
	if offset < start || offset > end {
		return fmt.Errorf("%w: truncate %s, which holds %d to %d, to %d", storage.ErrOffsetOutOfRange, l.dir, start, end, offset)
	}
	if l.failed != nil {
		return l.failed
	}
	// start <= offset < end, and segments leave no gap: a batch of
	// segment i holds offset.
	i := l.segmentFor(offset)
	s := l.segs[i]
	pos, err := s.find(offset)
	if err != nil {
		return err
	}
	h, err := s.header(pos)
	if err != nil {
		return err
	}
	if h.BaseOffset != offset {
		return fmt.Errorf("%w: truncate %s to %d, inside the batch at %d to %d", storage.ErrNotBatchBoundary, l.dir, offset, h.BaseOffset, h.LastOffset)
	}
	// The recovery point first: a crash in the middle must not leave one
	// past what the log then holds.
	if err := l.d.lowerPoint(l.key, recoveryPoint{id: l.id, offset: min(offset, l.flushed)}); err != nil {
		return l.fail(err)
	}
	if err := l.dropAfterLocked(i); err != nil {
		return l.fail(err)
	}
	cut := s.size - pos
	if err := s.truncate(pos, offset, l.cfg.sync); err != nil {
		return l.fail(err)
	}
	l.size -= cut
	l.cutLocked(offset)
	return nil
}

// Reset implements storage.Log: it deletes every segment but the first,
// newest first, empties the first and renames it to start, durably (see
// above). O(segments), plus an fsync per segment deleted and three more.
func (l *Log) Reset(start int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if start < 0 {
		return fmt.Errorf("%w: reset %s to %d", storage.ErrOffsetOutOfRange, l.dir, start)
	}
	if l.failed != nil {
		return l.failed
	}
	if err := l.d.lowerPoint(l.key, recoveryPoint{id: l.id, offset: min(start, l.segs[0].base, l.flushed)}); err != nil {
		return l.fail(err)
	}
	if err := l.dropAfterLocked(0); err != nil {
		return l.fail(err)
	}
	s := l.segs[0]
	if err := s.truncate(0, s.base, l.cfg.sync); err != nil {
		return l.fail(err)
	}
	l.size = 0
	if start != s.base {
		ns, err := s.rebase(start, l.cfg)
		if err == nil {
			err = atomicfile.SyncDir(l.cfg.sync, l.dir)
		}
		if err != nil {
			return l.fail(err)
		}
		l.segs[0] = ns
	}
	l.cutLocked(start)
	return nil
}

// dropAfterLocked deletes the segments after segment i, newest first, each
// deletion made durable before the next (step 1 above).
//
// REQUIRES: l.mu held for writing.
func (l *Log) dropAfterLocked(i int) error {
	for len(l.segs) > i+1 {
		last := l.active()
		l.segs[len(l.segs)-1] = nil
		l.segs = l.segs[:len(l.segs)-1]
		l.size -= last.size
		if err := last.remove(); err != nil {
			return err
		}
		if err := atomicfile.SyncDir(l.cfg.sync, l.dir); err != nil {
			return err
		}
	}
	return nil
}

// cutLocked records that the log now ends at end, everything in it
// fsynced, and that a flush begun before is overtaken: it may have
// captured the active segment as it was before the cut.
//
// REQUIRES: l.mu held for writing.
func (l *Log) cutLocked(end int64) {
	l.setFlushedLocked(end)
	l.cuts++
}
