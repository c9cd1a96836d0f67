package logdir

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Segment files are named by their base offset, zero-padded to 20 digits,
// as Kafka names them.
const (
	logSuffix   = ".log"
	indexSuffix = ".index"
)

func segmentPath(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, logSuffix))
}

func indexPath(logPath string) string { return logPath[:len(logPath)-len(logSuffix)] + indexSuffix }

// A segment is a run of a partition's batches: a .log file holding them
// whole, back to back, exactly as they are served, and its sparse offset
// index (.index). The last segment of a log is its active one, the only
// one appended to; the others are sealed, and fsynced when they were.
//
// Fields marked immutable are set before the segment is shared; the
// others are guarded by the Log's mu: written with it held for writing,
// read with it held at least for reading.
type segment struct {
	base int64  // immutable: the base offset of its first batch
	path string // immutable: the .log's path; the .index is beside it

	// cache holds the .log of a sealed segment: nil while the segment is
	// active. While it is set, f, refs and elem are its (fileCache.mu),
	// f is nil when the cache closed the file, and f is reached with
	// file, never directly.
	cache *fileCache
	f     *os.File // the .log: read with ReadAt, appended to with WriteAt at size
	refs  int      // reads holding f open (cached only)
	elem  *list.Element
	idx   *os.File // the .index, open for appends while active; nil once sealed
	index []indexEntry
	x     indexer

	size    int64     // bytes of whole batches
	next    int64     // the offset after its last batch; base when empty
	maxTS   int64     // the largest max timestamp of its batches; -1 if none has one
	untimed bool      // some batch has no timestamps (its retention time is modTime)
	modTime int64     // ms: when last appended to (the file's mtime once reopened)
	created time.Time // when it was created or reopened: log.roll.ms counts from it
}

// createSegment creates the empty segment at base in dir, both files new.
func createSegment(dir string, base int64, cfg *config) (*segment, error) {
	path := segmentPath(dir, base)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logdir: create segment: %w", err)
	}
	idx, err := os.OpenFile(indexPath(path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("logdir: create index: %w", err)
	}
	return emptySegment(base, path, f, idx, cfg), nil
}

// emptySegment returns the empty active segment at base whose files, both
// empty and open for appends, are f and idx.
func emptySegment(base int64, path string, f, idx *os.File, cfg *config) *segment {
	now := cfg.clock.Now()
	return &segment{base: base, path: path, f: f, idx: idx, x: indexer{interval: cfg.indexInterval},
		next: base, maxTS: -1, modTime: now.UnixMilli(), created: now}
}

// corrupt returns an error wrapping storage.ErrCorruptBatch that names the
// segment's file and the position of the batch at fault.
func (s *segment) corrupt(pos int64, err error) error {
	if !errors.Is(err, storage.ErrCorruptBatch) {
		err = fmt.Errorf("%w: %v", storage.ErrCorruptBatch, err)
	}
	return fmt.Errorf("logdir: %s, position %d: %w", s.path, pos, err)
}

// noRelease is file's release for an active segment, always open.
func noRelease() {}

// file returns the segment's .log for reading, and the func to call when
// the reading is done: an active segment's file is always open; a sealed
// one's is held open by the cache meanwhile, opened again if need be.
//
// REQUIRES: the segment's Log's mu held.
func (s *segment) file() (*os.File, func(), error) {
	if s.cache == nil {
		return s.f, noRelease, nil
	}
	f, err := s.cache.acquire(s)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { s.cache.release(s) }, nil
}

// header returns the info of the batch at pos (see headerIn).
func (s *segment) header(pos int64) (storage.BatchInfo, error) {
	f, release, err := s.file()
	if err != nil {
		return storage.BatchInfo{}, err
	}
	defer release()
	return s.headerIn(f, pos)
}

// headerIn returns the info of the batch at pos of f, the segment's .log,
// its AppendTime the segment's last append: a durable log keeps no time
// per batch, and Kafka falls back to the segment's modification time
// likewise. One pread.
func (s *segment) headerIn(f *os.File, pos int64) (storage.BatchInfo, error) {
	var h [storage.BatchHeaderSize]byte
	if err := readAt(f, h[:], pos); err != nil {
		return storage.BatchInfo{}, fmt.Errorf("logdir: read %s at %d: %w", s.path, pos, err)
	}
	info, err := storage.ReadBatchHeader(h[:])
	if err != nil {
		return storage.BatchInfo{}, s.corrupt(pos, err)
	}
	info.AppendTime = s.modTime
	return info, nil
}

// wholeHeaderIn returns the info of the batch at pos of f, whose header h
// headerIn read, from the whole batch: what its header alone does not say
// (a control batch's type, in its record). One pread of the batch.
func (s *segment) wholeHeaderIn(f *os.File, pos int64, h storage.BatchInfo) (storage.BatchInfo, error) {
	raw := make([]byte, h.Size)
	if err := readAt(f, raw, pos); err != nil {
		return storage.BatchInfo{}, fmt.Errorf("logdir: read %s at %d: %w", s.path, pos, err)
	}
	info, err := storage.ReadBatchHeader(raw)
	if err != nil {
		return storage.BatchInfo{}, s.corrupt(pos, err)
	}
	info.AppendTime = h.AppendTime
	return info, nil
}

// find returns the position of the batch holding offset, or of the first
// after it, or size: an index lookup, then a scan of the headers from the
// entry found, about log.index.interval.bytes at most.
func (s *segment) find(offset int64) (int64, error) {
	pos := lookup(s.index, offset-s.base)
	if pos >= s.size {
		return s.size, nil
	}
	f, release, err := s.file()
	if err != nil {
		return 0, err
	}
	defer release()
	for pos < s.size {
		h, err := s.headerIn(f, pos)
		if err != nil {
			return 0, err
		}
		if h.LastOffset >= offset {
			return pos, nil
		}
		pos += int64(h.Size)
	}
	return s.size, nil
}

// read appends to dst the whole batches from position pos on that end
// before limit and fit in budget bytes (the first whatever its size, with
// minOne). It returns dst, the bytes read, and whether it stopped before
// the segment's end, so that a read goes on into the next segment only
// when it did not. One pread for the first header, one for the batches:
// it reads up to budget bytes at once and keeps the whole batches.
func (s *segment) read(dst []byte, pos, limit int64, budget int, minOne bool) ([]byte, int, bool, error) {
	if pos >= s.size {
		return dst, 0, false, nil
	}
	f, release, err := s.file()
	if err != nil {
		return dst, 0, true, err
	}
	defer release()
	first, err := s.headerIn(f, pos)
	if err != nil {
		return dst, 0, true, err
	}
	if first.LastOffset >= limit || (first.Size > budget && !minOne) {
		return dst, 0, true, nil
	}
	want := max(first.Size, int(min(int64(budget), s.size-pos)))
	start := len(dst)
	dst = slices.Grow(dst, want)[:start+want]
	if err := readAt(f, dst[start:], pos); err != nil {
		return dst[:start], 0, true, fmt.Errorf("logdir: read %s at %d: %w", s.path, pos, err)
	}
	n := first.Size
	for want-n >= storage.BatchHeaderSize {
		h, err := storage.ReadBatchHeader(dst[start+n:])
		if err != nil {
			return dst[:start], 0, true, s.corrupt(pos+int64(n), err)
		}
		if n+h.Size > want || h.LastOffset >= limit {
			break
		}
		n += h.Size
	}
	return dst[:start+n], n, pos+int64(n) < s.size, nil
}

// append writes raw, a batch whose info is given, at the segment's end,
// and its index entry if it gets one; now is the append time (ms). On an
// error the segment is as it was: what was written is cut off again.
func (s *segment) append(raw []byte, info storage.BatchInfo, now int64) error {
	x := s.x
	e, indexed := x.add(info.LastOffset-s.base, s.size, len(raw))
	if _, err := s.f.WriteAt(raw, s.size); err != nil {
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("logdir: write %s: %w", s.path, err)
	}
	if indexed {
		if _, err := s.idx.WriteAt(e.encode(nil), int64(len(s.index))*indexEntrySize); err != nil {
			_ = s.f.Truncate(s.size)
			return fmt.Errorf("logdir: write %s: %w", indexPath(s.path), err)
		}
		s.index = append(s.index, e)
	}
	s.x = x
	s.size += int64(len(raw))
	s.next = info.LastOffset + 1
	s.noteTime(info.MaxTimestamp)
	s.modTime = now
	return nil
}

// noteTime accounts for a batch's max timestamp in the segment's retention
// time.
func (s *segment) noteTime(maxTimestamp int64) {
	if maxTimestamp < 0 {
		s.untimed = true
	} else {
		s.maxTS = max(s.maxTS, maxTimestamp)
	}
}

// retentionTime is the largest retention time of its batches (see
// storage.Segment.MaxTime).
func (s *segment) retentionTime() int64 {
	if s.untimed {
		return max(s.maxTS, s.modTime)
	}
	return s.maxTS
}

// syncFiles fsyncs the .log, then the .index, with the files given: the
// flusher calls it without the Log's lock, having read them under it.
func syncFiles(sync func(*os.File) error, f, idx *os.File) error {
	if err := sync(f); err != nil {
		return fmt.Errorf("logdir: fsync %s: %w", f.Name(), err)
	}
	if idx != nil {
		if err := sync(idx); err != nil {
			return fmt.Errorf("logdir: fsync %s: %w", idx.Name(), err)
		}
	}
	return nil
}

// seal fsyncs the segment and closes its index for appends: it is no longer
// the active one, and everything in it is on disk. Its .log goes to the
// cache of sealed files, which may close it.
func (s *segment) seal(sync func(*os.File) error, cache *fileCache) error {
	if err := syncFiles(sync, s.f, s.idx); err != nil {
		return err
	}
	err := s.idx.Close()
	s.idx = nil
	cache.add(s)
	return err
}

// truncate cuts the segment at pos, the position of one of its batches or
// its size, whose base offset is next: the .log is cut and fsynced, then the
// .index is cut to the entries of the batches kept and fsynced. The segment
// becomes the log's active one: a sealed segment's files are reopened for
// appends first (a recovered one's .log is open read-only). Its retention
// time is recomputed from the headers of the batches kept, one pread each.
// A crash between the two cuts leaves an index that points past its
// segment, which recovery rebuilds. On an error the files may be cut or
// not, and the caller fails the log. O(batches kept in the segment).
func (s *segment) truncate(pos, next int64, sync func(*os.File) error) error {
	if s.idx == nil {
		if err := s.reopen(); err != nil {
			return err
		}
	}
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("logdir: truncate %s: %w", s.path, err)
	}
	if err := sync(s.f); err != nil {
		return fmt.Errorf("logdir: fsync %s: %w", s.path, err)
	}
	keep := sort.Search(len(s.index), func(i int) bool { return int64(s.index[i].pos) >= pos })
	if err := s.idx.Truncate(int64(keep) * indexEntrySize); err != nil {
		return fmt.Errorf("logdir: truncate %s: %w", indexPath(s.path), err)
	}
	if err := sync(s.idx); err != nil {
		return fmt.Errorf("logdir: fsync %s: %w", indexPath(s.path), err)
	}
	s.index = s.index[:keep]
	s.size, s.next = pos, next
	s.x.since = s.size
	if keep > 0 {
		s.x.since = s.size - int64(s.index[keep-1].pos)
	}
	s.maxTS, s.untimed = -1, false
	for at := int64(0); at < s.size; {
		h, err := s.header(at)
		if err != nil {
			return err
		}
		s.noteTime(h.MaxTimestamp)
		at += int64(h.Size)
	}
	return nil
}

// reopen opens a sealed segment's files for appends again, taking it out
// of the cache of sealed files: it becomes the active segment.
func (s *segment) reopen() error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	idx, err := os.OpenFile(indexPath(s.path), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("logdir: %w", err)
	}
	if s.cache != nil {
		_ = s.cache.forget(s) // only read from: nothing to lose
	}
	s.f, s.idx = f, idx
	return nil
}

// rebase closes the segment, which must be empty, renames its files to
// those of a segment at base, the .index first, and returns that segment,
// open for appends. Each rename leaves files that recovery opens as one
// empty segment, at the old base or at the new one: an .index renamed
// without its .log is an orphan, deleted, and the .log left without an
// index gets an empty one. The caller makes the renames durable.
func (s *segment) rebase(base int64, cfg *config) (*segment, error) {
	if s.size != 0 {
		panic(fmt.Sprintf("logdir: rebase of %s, which holds %d bytes", s.path, s.size))
	}
	if err := s.close(); err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	path := segmentPath(filepath.Dir(s.path), base)
	if err := os.Rename(indexPath(s.path), indexPath(path)); err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	if err := os.Rename(s.path, path); err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	idx, err := os.OpenFile(indexPath(path), os.O_RDWR, 0)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("logdir: %w", err)
	}
	return emptySegment(base, path, f, idx, cfg), nil
}

// close closes its files (a sealed one's, if the cache has it open). A
// segment already closed (by a rebase that then failed) is no error.
func (s *segment) close() error {
	var err error
	if s.cache != nil {
		err = s.cache.forget(s)
	} else {
		err = s.f.Close()
	}
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	if s.idx != nil {
		err = errors.Join(err, s.idx.Close())
		s.idx = nil
	}
	return err
}

// remove closes and deletes its files, the .log first: a crash in between
// leaves an .index without its .log, which opening deletes.
func (s *segment) remove() error {
	err := s.close()
	if rmErr := os.Remove(s.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	if rmErr := os.Remove(indexPath(s.path)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	return err
}

// readAt fills buf from f at off; a short read is an error.
func readAt(f io.ReaderAt, buf []byte, off int64) error {
	n, err := f.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
