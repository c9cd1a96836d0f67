package logdir

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Log is one partition's log in segment files, in its own directory of
// the log dir: storage.Log made durable. Dir.OpenLog opens it, recovering
// what the directory holds.
//
// Partition calls it under its own lock (see storage.Log); the directory's
// flusher calls it too, so it guards itself with mu, a leaf lock. An fsync
// by the flusher runs outside mu, so that appends go on meanwhile.
type Log struct {
	dir   string          // immutable: the partition's directory
	cfg   *config         // immutable: the directory's
	d     *Dir            // immutable: the log dir it is in
	files *fileCache      // immutable: the directory's cache of sealed segment files
	key   pointKey        // immutable: its topic and partition, in the recovery checkpoint
	id    storage.TopicID // immutable: its topic's id
	mu    sync.RWMutex    // guards the following
	// segmentBytes and rollAfter are the size and the age at which its
	// active segment rolls: the directory's (or its topic's, by option),
	// unless SetSegmentRoll gave the topic's own.
	segmentBytes int64
	rollAfter    time.Duration
	segs         []*segment // by base offset; the last is the active one, never absent
	size         int64      // bytes in all segments
	flushed      int64      // every offset below it is fsynced
	cuts         uint64     // TruncateTo and Reset calls: a flush begun before one is overtaken
	failed       error      // the first write or fsync that failed: appends are refused since
	closed       bool
}

var _ storage.Log = (*Log)(nil)

// active returns the segment appended to. REQUIRES: l.mu held.
func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// endLocked returns the offset the next batch gets. REQUIRES: l.mu held.
func (l *Log) endLocked() int64 { return l.active().next }

// Append writes b at the end of the active segment, rolling a new segment
// first when b would take the active one past log.segment.bytes, when the
// active one is older than log.roll.ms, or when b's offsets would not fit
// its index; then it fsyncs if log.flush.interval.messages records are
// unflushed. After a write or an fsync fails, the log refuses every append
// with that error: the disk's state is unknown, and Kafka takes such a log
// dir offline too. O(len(b)) plus the fsyncs.
func (l *Log) Append(b *storage.Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return l.failed
	}
	info, raw := b.Info(), b.Bytes()
	if end := l.endLocked(); info.BaseOffset < end {
		return fmt.Errorf("logdir: batch at offset %d appended to %s, which ends at %d", info.BaseOffset, l.dir, end)
	}
	now := l.cfg.clock.Now()
	if s := l.active(); s.size > 0 && (s.size+int64(len(raw)) > l.segmentBytes ||
		info.LastOffset-s.base > math.MaxInt32 ||
		(l.rollAfter > 0 && now.Sub(s.created) >= l.rollAfter)) {
		if err := l.rollLocked(); err != nil {
			return l.fail(err)
		}
	}
	appendTime := info.AppendTime
	if appendTime == 0 {
		appendTime = now.UnixMilli()
	}
	if err := l.active().append(raw, info, appendTime); err != nil {
		return l.fail(err)
	}
	l.size += int64(len(raw))
	if l.endLocked()-l.flushed >= l.cfg.flushMessages {
		if err := l.syncLocked(); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// SetSegmentRoll implements storage.SegmentRoller: the active segment
// rolls at bytes and at age from the next append on (a topic's own
// segment.bytes and segment.ms); zero for either is the directory's.
func (l *Log) SetSegmentRoll(bytes int64, age time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segmentBytes, l.rollAfter = l.cfg.segmentBytesOf(l.key.topic), l.cfg.rollAfter
	if bytes > 0 {
		l.segmentBytes = bytes
	}
	if age > 0 {
		l.rollAfter = age
	}
}

// fail records err as the reason every later append is refused.
//
// REQUIRES: l.mu held for writing.
func (l *Log) fail(err error) error {
	l.failed = err
	l.d.MarkUnclean() // the log's state on disk is unknown: the next start checks it as after a crash
	l.cfg.log.Error("log failed: it takes no more appends until it is reopened", zap.String("dir", l.dir), zap.Error(err))
	return err
}

// rollLocked seals the active segment (fsyncing it) and starts a new one
// at the log end.
//
// REQUIRES: l.mu held for writing.
func (l *Log) rollLocked() error {
	old := l.active()
	if err := old.seal(l.cfg.sync, l.files); err != nil {
		return err
	}
	l.setFlushedLocked(old.next)
	s, err := createSegment(l.dir, old.next, l.cfg)
	if err != nil {
		return err
	}
	// The new file's name must survive a power loss before anything in
	// it is fsynced.
	if err := atomicfile.SyncDir(l.cfg.sync, l.dir); err != nil {
		_ = s.remove()
		return err
	}
	l.segs = append(l.segs, s)
	return nil
}

// syncLocked fsyncs the active segment.
//
// REQUIRES: l.mu held for writing.
func (l *Log) syncLocked() error {
	s := l.active()
	if err := syncFiles(l.cfg.sync, s.f, s.idx); err != nil {
		return err
	}
	l.setFlushedLocked(s.next)
	return nil
}

// setFlushedLocked records that every offset below to is fsynced: the
// log's recovery point, for the directory's next checkpoint.
//
// REQUIRES: l.mu held for writing.
func (l *Log) setFlushedLocked(to int64) {
	l.flushed = to
	l.d.notePoint(l.key, recoveryPoint{id: l.id, offset: to})
}

// segmentFor returns the index of the segment holding offset: the last
// whose base is at or before it (the first, for an offset before it).
//
// REQUIRES: l.mu held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// Read implements storage.Log: it finds the segment holding offset, the
// position by its index, scans to the batch, and reads on across segments
// until limit or maxBytes. O(log segments + log.index.interval.bytes +
// bytes read).
func (l *Log) Read(dst []byte, offset, limit int64, maxBytes int, minOne bool) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, ErrClosed
	}
	i := l.segmentFor(offset)
	pos, err := l.segs[i].find(offset)
	if err != nil {
		return dst, err
	}
	read := 0
	for ; i < len(l.segs); i, pos = i+1, 0 {
		var n int
		var stopped bool
		dst, n, stopped, err = l.segs[i].read(dst, pos, limit, maxBytes-read, minOne && read == 0)
		read += n
		if err != nil || stopped {
			break
		}
	}
	return dst, err
}

// Scan implements storage.Log, reading each batch's header from its file.
// The AppendTime it reports is the last append to the batch's segment (see
// segment.header). A control batch's type is in its record, not its
// header: a control batch (a transaction marker, a hundred bytes or so) is
// read whole. One pread per batch, two per control batch.
func (l *Log) Scan(offset int64, fn func(storage.BatchInfo) bool) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	i := l.segmentFor(offset)
	pos, err := l.segs[i].find(offset)
	if err != nil {
		return err
	}
	for ; i < len(l.segs); i, pos = i+1, 0 {
		if stop, err := l.segs[i].scan(pos, fn); stop || err != nil {
			return err
		}
	}
	return nil
}

// scan calls fn with the header of each batch of s from pos, and reports
// whether fn stopped it.
func (s *segment) scan(pos int64, fn func(storage.BatchInfo) bool) (bool, error) {
	if pos >= s.size {
		return false, nil
	}
	f, release, err := s.file()
	if err != nil {
		return true, err
	}
	defer release()
	for pos < s.size {
		h, err := s.headerIn(f, pos)
		if err == nil && h.Control == storage.ControlUnread {
			h, err = s.wholeHeaderIn(f, pos, h)
		}
		if err != nil {
			return true, err
		}
		if !fn(h) {
			return true, nil
		}
		pos += int64(h.Size)
	}
	return false, nil
}

// Segments implements storage.Log with the segment files that hold a
// batch. O(segments), from memory.
func (l *Log) Segments(fn func(storage.Segment) bool) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	for _, s := range l.segs {
		if s.size == 0 {
			continue
		}
		if !fn(storage.Segment{BaseOffset: s.base, NextOffset: s.next, Size: s.size, MaxTime: s.retentionTime()}) {
			break
		}
	}
	return nil
}

// DropBefore implements storage.Log: it deletes the segment files whose
// batches all end before offset, oldest first. When that is every batch,
// it first rolls an empty active segment at the log end, as Kafka does, so
// that the log keeps its offsets. O(segments deleted).
func (l *Log) DropBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if end := l.endLocked(); offset > end {
		return fmt.Errorf("logdir: drop before %d in %s, which ends at %d", offset, l.dir, end)
	}
	n := 0
	for n < len(l.segs) && l.segs[n].size > 0 && l.segs[n].next <= offset {
		n++
	}
	if n == 0 {
		return nil
	}
	if n == len(l.segs) {
		if l.failed != nil {
			return l.failed
		}
		if err := l.rollLocked(); err != nil {
			return l.fail(err)
		}
	}
	var errs []error
	for _, s := range l.segs[:n] {
		l.size -= s.size
		errs = append(errs, s.remove())
	}
	clear(l.segs[:n])
	l.segs = l.segs[n:]
	return errors.Join(errs...)
}

// Bounds implements storage.Log. O(1).
func (l *Log) Bounds() storage.Bounds {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return storage.Bounds{}
	}
	return storage.Bounds{Start: l.segs[0].base, End: l.endLocked(), Size: l.size}
}

// Close fsyncs the active segment, unless nothing is left to flush, and
// closes every file: what the log holds is on disk for the next open.
// Close is idempotent.
func (l *Log) Close() error { return l.close(true) }

// Remove closes the log and deletes its directory: its topic was deleted.
// The directory is first renamed out of the way (Kafka's "-delete"
// suffix), so that a crash in the middle leaves nothing that opens as the
// partition; opening the log dir finishes the deletion.
func (l *Log) Remove() error {
	err := l.close(false)
	l.d.forgetPoint(l.key)
	return errors.Join(err, l.d.removeDir(l.dir))
}

func (l *Log) close(sync bool) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	var errs []error
	if sync && l.failed == nil && l.flushed < l.endLocked() {
		errs = append(errs, l.syncLocked())
	}
	for _, s := range l.segs {
		errs = append(errs, s.close())
	}
	l.mu.Unlock()
	l.d.forget(l)
	return errors.Join(errs...)
}

// flushIfDirty fsyncs the active segment if anything appended is not
// fsynced yet: the directory's flusher calls it every
// log.flush.interval.ms. The fsync runs outside mu; a roll, a deletion, a
// truncation or Close that overtakes it has fsynced or dropped the segment
// itself, and its error then means nothing (after a truncation the
// segment may even hold other batches at the offsets it captured).
func (l *Log) flushIfDirty() {
	l.mu.RLock()
	if l.closed || l.failed != nil || l.flushed >= l.endLocked() {
		l.mu.RUnlock()
		return
	}
	s := l.active()
	f, idx, to, cuts := s.f, s.idx, s.next, l.cuts
	l.mu.RUnlock()

	err := syncFiles(l.cfg.sync, f, idx)

	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed || l.active() != s || l.cuts != cuts:
		// Overtaken: see above.
	case err != nil && l.failed == nil:
		_ = l.fail(err)
	case err == nil && to > l.flushed:
		l.setFlushedLocked(to)
	}
}
