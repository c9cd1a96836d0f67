package logdir

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/internal/batchfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// openLog opens the log whose segments are in dir (which exists), and
// recovers it (see the package doc, # Recovery): every segment is read and
// checked whole; a sealed one must be intact, the active one loses a torn
// tail; indexes that disagree with their segment are rebuilt; segments must
// follow each other without a gap. A log that existed must have a segment
// (there is always an active one): without, its files were lost, and that
// is ErrInconsistent, not an empty partition. A new log gets its first
// segment. The active segment is then fsynced, so that the log starts
// with nothing unflushed. O(bytes in the log).
func openLog(d *Dir, dir string, key pointKey, id storage.TopicID, existed bool) (*Log, error) {
	cfg := &d.cfg
	bases, err := listSegments(dir, cfg)
	if err != nil {
		return nil, err
	}
	if existed && len(bases) == 0 {
		return nil, fmt.Errorf("%w: %s holds no segment file", ErrInconsistent, dir)
	}
	l := &Log{dir: dir, cfg: cfg, d: d, files: d.files, key: key, id: id, segmentBytes: cfg.segmentBytesOf(key.topic),
		rollAfter: cfg.rollAfter}
	tail := tailRule{clean: d.clean, point: -1}
	if existed {
		tail.point = d.recoveryPointOf(key, id)
	}
	fail := func(err error) (*Log, error) {
		for _, s := range l.segs {
			_ = s.close()
		}
		return nil, err
	}
	if len(bases) == 0 {
		s, err := createSegment(dir, 0, cfg)
		if err == nil {
			err = atomicfile.SyncDir(cfg.sync, dir)
		}
		if err != nil {
			return fail(err)
		}
		l.segs = append(l.segs, s)
	}
	for i, base := range bases {
		if i > 0 {
			if prev := l.segs[i-1]; prev.next != base {
				return fail(fmt.Errorf("%w: %s ends at offset %d, but the next segment starts at %d",
					ErrInconsistent, prev.path, prev.next, base))
			}
		}
		last := i == len(bases)-1
		s, err := recoverSegment(dir, base, cfg, last, tail)
		if err != nil {
			return fail(err)
		}
		if !last {
			d.files.add(s) // which may close it
		}
		l.segs = append(l.segs, s)
		l.size += s.size
	}
	if end := l.endLocked(); tail.point > end {
		return fail(fmt.Errorf("%w: %s ends at offset %d, but the offsets below %d were fsynced (%s): its last files were lost",
			ErrInconsistent, dir, end, tail.point, recoveryPointsName))
	}
	if err := l.syncLocked(); err != nil {
		return fail(err)
	}
	return l, nil
}

// tailRule says where recovery may cut a log's active segment: nowhere
// after a clean shutdown, and only at or past the recovery point (-1:
// none recorded) after an unclean one (see clean.go).
type tailRule struct {
	clean bool
	point int64
}

// allows reports whether a torn tail may start at offset next.
func (r tailRule) allows(next int64) bool { return !r.clean && next >= r.point }

// listSegments returns the base offsets of the segments in dir, in order.
// It deletes what an operation cut short by a crash leaves: an .index
// without its .log (a segment's deletion), a .tmp file (an atomic write).
func listSegments(dir string, cfg *config) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	logs := make(map[string]bool)
	for _, e := range entries {
		logs[e.Name()] = true
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, atomicfile.TmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("logdir: remove %s: %w", name, err)
			}
			continue
		}
		ext := filepath.Ext(name)
		if ext != logSuffix && ext != indexSuffix {
			continue // partition.metadata, or not ours
		}
		stem := strings.TrimSuffix(name, ext)
		base, err := strconv.ParseInt(stem, 10, 64)
		if err != nil || len(stem) != 20 || base < 0 {
			cfg.log.Warn("ignoring a file that is not a segment", zap.String("file", filepath.Join(dir, name)))
			continue
		}
		if ext == logSuffix {
			bases = append(bases, base)
		} else if !logs[stem+logSuffix] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("logdir: remove an orphan index: %w", err)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// recoverSegment opens the segment at base and checks every batch in it
// (batchfile.Scan): a sealed segment that is not intact is an error naming
// the file, the position and the offset; the active one (last) is cut at
// a torn tail. Its index is kept if every entry points at the batch it
// names, and rebuilt otherwise.
func recoverSegment(dir string, base int64, cfg *config, last bool, tail tailRule) (*segment, error) {
	path := segmentPath(dir, base)
	flag := os.O_RDONLY
	if last {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("logdir: %w", err)
	}
	s := &segment{base: base, path: path, f: f, next: base, maxTS: -1, x: indexer{interval: cfg.indexInterval},
		modTime: st.ModTime().UnixMilli(), created: cfg.clock.Now()}
	fail := func(err error) (*segment, error) {
		_ = s.close()
		return nil, err
	}

	stored, idxErr := readIndex(indexPath(path))
	check := indexCheck{entries: stored}
	var rebuilt []indexEntry
	tear, err := batchfile.Scan(f, st.Size(), 0, base, func(b batchfile.Batch) error {
		rel := b.Info.LastOffset - base
		if rel > math.MaxInt32 {
			return s.corrupt(b.Pos, fmt.Errorf("offset %d is too far from the segment's base for its index", b.Info.LastOffset))
		}
		if e, ok := s.x.add(rel, b.Pos, len(b.Raw)); ok {
			rebuilt = append(rebuilt, e)
		}
		check.see(rel, b.Pos)
		s.size = b.Pos + int64(len(b.Raw))
		s.next = b.Info.LastOffset + 1
		s.noteTime(b.Info.MaxTimestamp)
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("logdir: %s: %w", path, err))
	}
	if tear != nil {
		if !last {
			// A sealed segment was fsynced before the next one was
			// created: no crash leaves it short.
			return fail(fmt.Errorf("logdir: sealed segment %s, position %d (offset %d): %w",
				path, tear.Pos, s.next, tear.Reason))
		}
		if !tail.allows(s.next) {
			why := "the log was shut down cleanly"
			if !tail.clean {
				why = fmt.Sprintf("the offsets below %d were fsynced", tail.point)
			}
			return fail(fmt.Errorf("logdir: %s, position %d (offset %d): %w: not a torn tail: %s",
				path, tear.Pos, s.next, tear.Reason, why))
		}
		if err := f.Truncate(tear.Pos); err != nil {
			return fail(fmt.Errorf("logdir: truncate %s: %w", path, err))
		}
		cfg.log.Warn("truncated a torn tail", zap.String("file", path), zap.Int64("position", tear.Pos),
			zap.Int64("next_offset", s.next), zap.Int64("bytes", st.Size()-tear.Pos), zap.NamedError("reason", tear.Reason))
	}

	s.index = stored
	if idxErr != nil || !check.valid() {
		if !errors.Is(idxErr, fs.ErrNotExist) || s.size > 0 {
			cfg.log.Warn("rebuilt an offset index", zap.String("file", indexPath(path)),
				zap.NamedError("reason", errors.Join(idxErr, check.err)))
		}
		s.index = rebuilt
		if err := writeIndex(indexPath(path), rebuilt, cfg.sync); err != nil {
			return fail(err)
		}
	}
	s.x.since = s.size
	if n := len(s.index); n > 0 {
		s.x.since = s.size - int64(s.index[n-1].pos)
	}
	if last {
		if s.idx, err = os.OpenFile(indexPath(path), os.O_RDWR, 0); err != nil {
			return fail(fmt.Errorf("logdir: %w", err))
		}
	}
	return s, nil
}

// indexCheck checks an index's entries against the batches of its segment
// as they are read in order: each entry must be at a batch's position and
// carry that batch's last offset.
type indexCheck struct {
	entries []indexEntry
	matched int // entries checked so far
	err     error
}

func (c *indexCheck) see(rel, pos int64) {
	for c.err == nil && c.matched < len(c.entries) && int64(c.entries[c.matched].pos) <= pos {
		e := c.entries[c.matched]
		if int64(e.pos) < pos || int64(e.rel) != rel {
			c.err = fmt.Errorf("entry %d (%d at %d) names no batch", c.matched, e.rel, e.pos)
			return
		}
		c.matched++
	}
}

// valid reports whether every entry named a batch.
func (c *indexCheck) valid() bool {
	if c.err == nil && c.matched < len(c.entries) {
		e := c.entries[c.matched]
		c.err = fmt.Errorf("entry %d (%d at %d) points past the segment's batches", c.matched, e.rel, e.pos)
	}
	return c.err == nil
}

// readIndex reads an index file.
func readIndex(path string) ([]indexEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(data)
}

// writeIndex replaces an index file with entries, fsynced. The index is
// derived from its segment, so a crash in the middle costs only another
// rebuild.
func writeIndex(path string, entries []indexEntry, sync func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	_, err = f.Write(encodeIndex(entries))
	if err == nil {
		err = sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("logdir: write %s: %w", path, err)
	}
	return nil
}
