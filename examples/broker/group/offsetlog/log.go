package offsetlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/internal/batchfile"
)

// FileName is the offsets log's file in the directory given to Open.
const FileName = "offsets.log"

// Log is a group coordinator's offset store in a file: group.OffsetStore,
// durable. Its methods are safe for concurrent use.
type Log struct {
	path string // immutable
	cfg  config // immutable

	mu      sync.Mutex // guards the following; a leaf, below the coordinator's group mutexes
	f       *os.File   // the file, appended to with WriteAt at size
	size    int64      // bytes of whole batches
	next    int64      // the base offset of the next batch: records in the file
	flushed int64      // records below it are fsynced
	st      state
	failed  error // the first write or fsync that failed: every change is refused since
	closed  bool

	stop      chan struct{} // closed by Close: the flusher returns
	done      chan struct{} // closed by the flusher when it returns
	closeOnce sync.Once
}

var _ group.OffsetStore = (*Log)(nil)

// Open opens the offsets log in dir, creating both if need be, and replays
// it: every batch is checked as a partition's are (framing, CRC-32C,
// offsets), a torn tail is cut with a warning (unless the log was shut
// down cleanly: WithCleanShutdown), and a bad batch that a valid one
// follows, or a record this log does not write, fails Open,
// naming the position. The file is then fsynced, and the flusher started
// if WithFlush set an interval. O(file).
func Open(dir string, opts ...Option) (*Log, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("offsetlog: %w", err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + atomicfile.TmpSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("offsetlog: %w", err) // a compaction cut short
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("offsetlog: %w", err)
	}
	l := &Log{path: path, cfg: cfg, f: f, st: newState(), stop: make(chan struct{}), done: make(chan struct{})}
	err = l.replay()
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		err = atomicfile.SyncDir(cfg.sync, dir) // the new file's name
	}
	if err == nil {
		if err = cfg.sync(f); err != nil {
			err = fmt.Errorf("offsetlog: fsync %s: %w", path, err)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	l.flushed = l.next
	if cfg.flushInterval > 0 {
		go l.flushEvery(cfg.flushInterval)
	} else {
		close(l.done)
	}
	return l, nil
}

// replay reads the file into l.st and cuts a torn tail.
func (l *Log) replay() error {
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("offsetlog: %w", err)
	}
	tear, err := batchfile.Scan(l.f, st.Size(), 0, 0, func(b batchfile.Batch) error {
		recs, err := decodeRecords(b.Raw)
		if err != nil {
			return fmt.Errorf("position %d: %w", b.Pos, err)
		}
		for _, r := range recs {
			c, err := decode(r)
			if err != nil {
				return fmt.Errorf("position %d: %w", b.Pos, err)
			}
			l.st.apply(c)
		}
		l.size, l.next = b.Pos+int64(len(b.Raw)), b.Info.LastOffset+1
		return nil
	})
	if err != nil {
		return fmt.Errorf("offsetlog: %s: %w", l.path, err)
	}
	if tear != nil && l.cfg.clean {
		return fmt.Errorf("offsetlog: %s, position %d: %w: not a torn tail: the log was shut down cleanly",
			l.path, tear.Pos, tear.Reason)
	}
	if tear != nil {
		if err := l.f.Truncate(tear.Pos); err != nil {
			return fmt.Errorf("offsetlog: truncate %s: %w", l.path, err)
		}
		l.cfg.log.Warn("truncated a torn tail", zap.String("file", l.path), zap.Int64("position", tear.Pos),
			zap.Int64("bytes", st.Size()-tear.Pos), zap.NamedError("reason", tear.Reason))
	}
	return nil
}

// Load implements group.OffsetStore: the groups as the file left them, by
// name, their offsets by topic and partition.
func (l *Log) Load() ([]group.StoredGroup, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	out := make([]group.StoredGroup, 0, len(l.st.groups))
	for _, g := range l.st.sortedGroups() {
		gs := l.st.groups[g]
		out = append(out, group.StoredGroup{Group: g, ProtocolType: gs.ptype, Offsets: gs.sortedOffsets()})
	}
	return out, nil
}

// Commit implements group.OffsetStore: one batch holding the offsets and,
// if the group's protocol type is new, its metadata. Times are kept to the
// millisecond, as Kafka's.
func (l *Log) Commit(g, protocolType string, offsets []group.StoredOffset) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var recs []kmsg.Record
	var changes []change
	if gs := l.st.groups[g]; protocolType != "" && (gs == nil || gs.ptype != protocolType) {
		recs = append(recs, kmsg.Record{Key: groupKey(g), Value: groupValue(protocolType)})
		changes = append(changes, change{group: g, ptype: protocolType})
	}
	for _, o := range offsets {
		o.Committed = time.UnixMilli(o.Committed.UnixMilli())
		if !o.ExpireAt.IsZero() {
			o.ExpireAt = time.UnixMilli(o.ExpireAt.UnixMilli())
		}
		recs = append(recs, kmsg.Record{Key: offsetKey(g, o.TopicPartition), Value: offsetValue(o)})
		changes = append(changes, change{group: g, isOffset: true, tp: o.TopicPartition, offset: o})
	}
	return l.writeLocked(recs, changes)
}

// Delete implements group.OffsetStore: a tombstone for each offset the
// group has, nothing for the others.
func (l *Log) Delete(g string, partitions []group.TopicPartition) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	gs := l.st.groups[g]
	if gs == nil {
		return l.writeLocked(nil, nil)
	}
	seen := make(map[group.TopicPartition]bool, len(partitions))
	var recs []kmsg.Record
	var changes []change
	for _, tp := range partitions {
		if _, ok := gs.offsets[tp]; ok && !seen[tp] {
			seen[tp] = true
			recs = append(recs, kmsg.Record{Key: offsetKey(g, tp)})
			changes = append(changes, change{group: g, isOffset: true, tp: tp, deleted: true})
		}
	}
	return l.writeLocked(recs, changes)
}

// DeleteGroup implements group.OffsetStore: a tombstone for each of the
// group's offsets and for its metadata; nothing for a group it does not
// hold.
func (l *Log) DeleteGroup(g string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	gs := l.st.groups[g]
	if gs == nil {
		return l.writeLocked(nil, nil)
	}
	var recs []kmsg.Record
	var changes []change
	for _, o := range gs.sortedOffsets() {
		recs = append(recs, kmsg.Record{Key: offsetKey(g, o.TopicPartition)})
		changes = append(changes, change{group: g, isOffset: true, tp: o.TopicPartition, deleted: true})
	}
	if gs.ptype != "" {
		recs = append(recs, kmsg.Record{Key: groupKey(g)})
		changes = append(changes, change{group: g, deleted: true})
	}
	return l.writeLocked(recs, changes)
}

// writeLocked appends recs as one batch and applies changes, fsyncs if
// log.flush.interval.messages is reached, and compacts if the dead records
// are worth it. With nothing to write it only reports whether the log
// still takes changes. A write or fsync that fails is sticky.
//
// REQUIRES: l.mu held.
func (l *Log) writeLocked(recs []kmsg.Record, changes []change) error {
	switch {
	case l.closed:
		return ErrClosed
	case l.failed != nil:
		return l.failed
	case len(recs) == 0:
		return nil
	}
	raw := encodeBatch(l.next, time.Now(), recs)
	if _, err := l.f.WriteAt(raw, l.size); err != nil {
		_ = l.f.Truncate(l.size)
		return l.fail(fmt.Errorf("offsetlog: write %s: %w", l.path, err))
	}
	l.size += int64(len(raw))
	l.next += int64(len(recs))
	for _, c := range changes {
		l.st.apply(c)
	}
	if l.next-l.flushed >= l.cfg.flushMessages {
		if err := l.cfg.sync(l.f); err != nil {
			return l.fail(fmt.Errorf("offsetlog: fsync %s: %w", l.path, err))
		}
		l.flushed = l.next
	}
	l.maybeCompactLocked()
	return nil
}

// fail records err as the reason every later change is refused: after a
// failed write or fsync the file's state is unknown.
//
// REQUIRES: l.mu held.
func (l *Log) fail(err error) error {
	l.failed = err
	l.cfg.log.Error("offsets log failed: it takes no more changes until it is reopened", zap.Error(err))
	return err
}

// Close stops the flusher, fsyncs what is unflushed and closes the file.
// Close is idempotent.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		if l.failed == nil && l.next > l.flushed {
			err = l.cfg.sync(l.f)
		}
		err = errors.Join(err, l.f.Close())
	})
	return err
}

// flushEvery fsyncs the file every interval if anything is unflushed,
// until stop is closed.
func (l *Log) flushEvery(interval time.Duration) {
	defer close(l.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			l.flushIfDirty()
		}
	}
}

// flushIfDirty fsyncs outside mu, so that changes go on meanwhile; a
// compaction that replaced the file meanwhile fsynced the new one.
func (l *Log) flushIfDirty() {
	l.mu.Lock()
	if l.closed || l.failed != nil || l.next <= l.flushed {
		l.mu.Unlock()
		return
	}
	f, to := l.f, l.next
	l.mu.Unlock()

	err := l.cfg.sync(f)

	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed || l.f != f:
	case err != nil && l.failed == nil:
		_ = l.fail(fmt.Errorf("offsetlog: fsync %s: %w", l.path, err))
	case err == nil && to > l.flushed:
		l.flushed = to
	}
}
