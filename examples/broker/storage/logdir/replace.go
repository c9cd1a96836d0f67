package logdir

import (
	"fmt"
	"os"

	"go.uber.org/zap"

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

// Replace implements storage.Log (see above): StageReplace and Commit in
// one, under the log's lock. O(bytes of kept) plus three fsyncs.
func (l *Log) Replace(seg storage.Segment, kept []*storage.Batch) error {
	st, err := l.StageReplace(seg, kept)
	if err != nil {
		return err
	}
	return st.Commit()
}

// StageReplace implements storage.StagedReplacer: it writes the cleaned
// segment's files aside and fsyncs them, holding the log's lock only to
// find the segment, so that appends, reads and the partition's lock do not
// wait for the writing; the returned Commit renames them over the old
// files and swaps the segment in under the log's lock. A sealed segment
// changes only by a swap, and only the cleaner swaps: what was found stays
// true until the Commit, which checks it again (a truncation or
// retention may have taken the segment meanwhile, ErrSegmentChanged).
func (l *Log) StageReplace(seg storage.Segment, kept []*storage.Batch) (storage.StagedReplace, error) {
	l.mu.RLock()
	old, err := l.sealedLocked(seg)
	l.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if n := len(kept); n == 0 || kept[n-1].Info().LastOffset+1 != seg.NextOffset {
		return nil, fmt.Errorf("logdir: a cleaned %s must end where it did, at %d", old.path, seg.NextOffset)
	}
	s, err := writeCleaned(l.dir, old, kept, l.cfg)
	if err != nil {
		return nil, err
	}
	return &staged{l: l, seg: seg, old: old, s: s}, nil
}

// sealedLocked returns the sealed segment that seg describes, or
// ErrSegmentChanged if the log no longer has it as seg says.
//
// REQUIRES: l.mu held.
func (l *Log) sealedLocked(seg storage.Segment) (*segment, error) {
	if l.closed {
		return nil, ErrClosed
	}
	i := l.segmentFor(seg.BaseOffset)
	old := l.segs[i]
	if i == len(l.segs)-1 || old.base != seg.BaseOffset || old.next != seg.NextOffset || old.size != seg.Size {
		return nil, fmt.Errorf("%w: %s", storage.ErrSegmentChanged, old.path)
	}
	return old, nil
}

// staged is a cleaned segment written aside, its files under temporary
// names, waiting for its swap.
type staged struct {
	l      *Log
	seg    storage.Segment
	old, s *segment // the segment replaced, and its replacement
}

// Commit renames the staged files over the old segment's, the .index
// first (see above), and swaps the new segment in; if the old one is no
// longer in the log as it was, it drops them instead and returns
// ErrSegmentChanged.
func (st *staged) Commit() error {
	l := st.l
	l.mu.Lock()
	defer l.mu.Unlock()
	old, err := l.sealedLocked(st.seg)
	if err == nil && old != st.old {
		err = fmt.Errorf("%w: %s", storage.ErrSegmentChanged, old.path)
	}
	if err != nil {
		st.drop()
		return err
	}
	s, path := st.s, segmentPath(l.dir, old.base)
	if err := os.Rename(tmpName(indexPath(path)), indexPath(path)); err != nil {
		st.drop()
		return fmt.Errorf("logdir: %w", err)
	}
	if err := os.Rename(tmpName(path), path); err != nil {
		// The new index is in place over the old .log: recovery
		// rebuilds it; this process goes on with the old one's
		// entries in memory.
		st.drop()
		return fmt.Errorf("logdir: %w", err)
	}
	if err := atomicfile.SyncDir(l.cfg.sync, l.dir); err != nil {
		// Both renames are done in this process's view: the new
		// segment is the one read from now on, durable or not.
		l.cfg.log.Warn("a cleaned segment may be the old one after a crash", zap.String("file", path), zap.Error(err))
	}
	s.path = path
	_ = old.close() // its files are renamed over: only the descriptor goes
	l.files.add(s)
	l.size += s.size - old.size
	l.segs[l.segmentFor(old.base)] = s
	return nil
}

// Abort drops the staged files.
func (st *staged) Abort() { st.drop() }

// drop closes and removes the staged files that are still under their
// temporary names.
func (st *staged) drop() {
	path := segmentPath(st.l.dir, st.old.base)
	_ = st.s.f.Close()
	_ = os.Remove(tmpName(path))
	_ = os.Remove(tmpName(indexPath(path)))
}

// tmpName is the name a cleaned segment's file is written under before
// its rename: one that opening the log deletes (listSegments).
func tmpName(path string) string { return path + atomicfile.TmpSuffix }

// writeCleaned writes kept, under temporary names, as the segment that
// replaces old (see above), and returns it, fsynced, its index closed; on
// an error nothing of it is left.
func writeCleaned(dir string, old *segment, kept []*storage.Batch, cfg *config) (*segment, error) {
	path := segmentPath(dir, old.base)
	tmpLog, tmpIdx := tmpName(path), tmpName(indexPath(path))
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
	// The old segment's times are the cleaned one's: retention measures
	// it by when it was last appended to.
	s.modTime, s.created = old.modTime, old.created
	return s, nil
}

// KeepsSegmentExtents implements storage.SegmentExtentKeeper: recovery
// checks that segments follow each other (see above).
func (l *Log) KeepsSegmentExtents() bool { return true }

// cleanedName is where the log cleaner's last pass over the partition
// ended (Kafka's cleaner-offset-checkpoint, one per log dir there; one
// per partition here, as the log start's): a version line (0), then the
// offset.
const cleanedName = "cleaner-offset-checkpoint"

var _ storage.CleanerCheckpointer = (*Log)(nil)

// ReadCleanedTo implements storage.CleanerCheckpointer.
func (l *Log) ReadCleanedTo() (int64, bool, error) { return l.readOffsetFile(cleanedName) }

// WriteCleanedTo implements storage.CleanerCheckpointer, atomically.
func (l *Log) WriteCleanedTo(offset int64) error { return l.writeOffsetFile(cleanedName, offset) }
