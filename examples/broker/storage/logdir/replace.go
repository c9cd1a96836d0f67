package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Swapping a cleaned segment in (storage.Log's Replace).
//
// The log cleaner hands a sealed segment back rewritten: the same base
// offset, fewer bytes. Its files are written aside, under the names of the
// segment's own with atomicfile's temporary suffix, fsynced, and renamed
// over the old ones, the .index first, then the .log; then the directory
// is fsynced. A crash at any point leaves, for the segment's base offset:
//
//   - before the renames: the old files whole, and temporary files that
//     opening the log deletes (listSegments);
//   - between the two renames: the old .log and the new .index, which
//     recovery checks against its .log, finds naming batches the .log
//     does not have where they are, and rebuilds;
//   - after both: the new segment whole.
//
// So a restart mid-clean loses nothing: the records are the old segment's
// or the cleaned one's, which holds every record a consumer needs.
//
// A cleaned segment always ends where it did: the cleaner keeps its last
// batch, empty if need be (KeepsSegmentExtents), so that the segments
// still follow each other without a gap and recovery still tells a lost
// segment file from a cleaned one. Gaps are inside segments only, which
// recovery allows (batchfile.Scan).

// Replace implements storage.Log (see above). It holds the log's lock
// while it writes the new segment: appends to this log wait for it, as
// they wait for a roll's fsync. O(bytes of kept) plus two fsyncs.
func (l *Log) Replace(seg storage.Segment, kept []*storage.Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	i := l.segmentFor(seg.BaseOffset)
	old := l.segs[i]
	if i == len(l.segs)-1 || old.base != seg.BaseOffset || old.next != seg.NextOffset || old.size != seg.Size {
		return fmt.Errorf("%w: %s", storage.ErrSegmentChanged, old.path)
	}
	if n := len(kept); n == 0 || kept[n-1].Info().LastOffset+1 != old.next {
		return fmt.Errorf("logdir: a cleaned %s must end where it did, at %d", old.path, old.next)
	}
	s, err := writeCleaned(l.dir, old, kept, l.cfg)
	if err != nil {
		return err
	}
	_ = old.close() // its files are renamed over: only the descriptor goes
	l.files.add(s)
	l.size += s.size - old.size
	l.segs[i] = s
	return nil
}

// writeCleaned writes kept as the segment that replaces old (see above)
// and returns it, sealed; on an error the old files are in place.
func writeCleaned(dir string, old *segment, kept []*storage.Batch, cfg *config) (*segment, error) {
	path := segmentPath(dir, old.base)
	tmpLog, tmpIdx := path+atomicfile.TmpSuffix, indexPath(path)+atomicfile.TmpSuffix
	f, err := os.OpenFile(tmpLog, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	idx, err := os.OpenFile(tmpIdx, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmpLog)
		return nil, fmt.Errorf("logdir: %w", err)
	}
	s := emptySegment(old.base, tmpLog, f, idx, cfg)
	fail := func(err error) (*segment, error) {
		_ = f.Close()
		_ = idx.Close()
		_ = os.Remove(tmpLog)
		_ = os.Remove(tmpIdx)
		return nil, err
	}
	for _, b := range kept {
		if err := s.append(b.Bytes(), b.Info(), old.modTime); err != nil {
			return fail(err)
		}
	}
	if err := syncFiles(cfg.sync, f, idx); err != nil {
		return fail(err)
	}
	if err := idx.Close(); err != nil {
		return fail(fmt.Errorf("logdir: %w", err))
	}
	s.idx = nil
	if err := os.Rename(tmpIdx, indexPath(path)); err != nil {
		return fail(fmt.Errorf("logdir: %w", err))
	}
	if err := os.Rename(tmpLog, path); err != nil {
		// The new index is in place over the old .log: recovery
		// rebuilds it; this process goes on with the old one's
		// entries in memory.
		_ = f.Close()
		_ = os.Remove(tmpLog)
		return nil, fmt.Errorf("logdir: %w", err)
	}
	if err := atomicfile.SyncDir(cfg.sync, filepath.Dir(path)); err != nil {
		// Both renames are done in this process's view: the new
		// segment is the one read from now on, durable or not.
		err = errors.Join(err, errors.New("logdir: a cleaned segment may be the old one after a crash"))
		cfg.log.Warn(err.Error())
	}
	s.path = path
	// The old segment's times are the cleaned one's: retention measures
	// it by when it was last appended to.
	s.modTime, s.created = old.modTime, old.created
	return s, nil
}

// KeepsSegmentExtents implements storage.SegmentExtentKeeper: recovery
// checks that segments follow each other (see above).
func (l *Log) KeepsSegmentExtents() bool { return true }
