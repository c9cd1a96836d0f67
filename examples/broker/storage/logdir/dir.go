package logdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The files of a log dir, besides its partitions' directories.
const (
	lockName      = ".lock"
	deleteSuffix  = "-delete" // a partition directory being deleted
	partitionMeta = "partition.metadata"
)

// Dir is a log dir (Kafka's log.dirs, one directory): it holds each
// partition's log in a directory of its own, and the files that say what
// the partitions are. Open it once per process; its OpenLog is the
// storage's LogOpener.
type Dir struct {
	path      string     // immutable
	cfg       config     // immutable
	lock      *os.File   // immutable: holds the directory's lock while open
	clusterID string     // immutable
	files     *fileCache // immutable: the sealed segment files its logs keep open

	mu     sync.Mutex // guards the following; never held with a Log's mu
	logs   map[*Log]struct{}
	closed bool

	clean   bool        // immutable: the last shutdown was clean (clean.go)
	unclean atomic.Bool // a log failed, or MarkUnclean: Close leaves no marker

	pointsMu    sync.Mutex // guards the following: the recovery points (clean.go); a leaf, taken under a Log's mu
	points      map[pointKey]recoveryPoint
	pointsDirty bool            // changed since the checkpoint was written
	recovered   map[string]bool // partition directories opened, and so recovered, since Open

	catalogMu sync.Mutex                   // guards the following: the catalog's reads and writes (catalog.go)
	specs     map[string]storage.TopicSpec // nil until read

	idsMu sync.Mutex // serialises producer id reservations (ids.go)

	stop      chan struct{} // closed by Close: the flusher returns
	done      chan struct{} // closed by the flusher when it returns
	closeOnce sync.Once
}

// Open opens the log dir at path, creating it if need be: it takes the
// directory's lock (ErrLocked if another process holds it), reads or
// writes its meta.properties (a node id other than the one it was made
// for is ErrInconsistent), finishes deletions a crash cut short, and
// starts the flusher if log.flush.interval.ms is set. Partitions' logs are
// opened one by one with OpenLog.
func Open(path string, opts ...Option) (*Dir, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	if err := lockFile(lock); err != nil {
		_ = lock.Close()
		return nil, err
	}
	d := &Dir{path: path, cfg: cfg, lock: lock, logs: make(map[*Log]struct{}), files: newFileCache(cfg.openSegments),
		recovered: make(map[string]bool), stop: make(chan struct{}), done: make(chan struct{})}
	if d.clusterID, err = d.loadMeta(); err == nil {
		err = d.loadRecovery()
	}
	if err == nil {
		err = d.finishDeletions()
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	if cfg.flushInterval > 0 || cfg.checkpointInterval > 0 {
		go d.background()
	} else {
		close(d.done)
	}
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// ClusterID returns the cluster id in the directory's meta.properties,
// made when the directory was.
func (d *Dir) ClusterID() string { return d.clusterID }

// partitionDir returns the directory of a topic's partition, named as
// Kafka names it. Topic names are checked by the storage before a log is
// opened: letters, digits, '.', '_' and '-', never "." or "..".
func (d *Dir) partitionDir(topic string, partition int32) string {
	return filepath.Join(d.path, fmt.Sprintf("%s-%d", topic, partition))
}

// OpenLog opens the log of a topic's partition, recovering what its
// directory holds (see the package doc), or creating the directory. A
// directory left by a deleted topic of the same name (its topic id differs
// in partition.metadata) is deleted first. It is the storage's LogOpener.
func (d *Dir) OpenLog(topic string, id storage.TopicID, partition int32) (storage.Log, error) {
	dir := d.partitionDir(topic, partition)
	owner, err := readPartitionMeta(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A new partition, or one whose creation a crash cut short
		// before its partition.metadata was written: it holds no batch.
	case err != nil:
		return nil, err
	case owner != id:
		d.cfg.log.Warn("deleting the directory of a deleted topic", zap.String("dir", dir), zap.Stringer("topic_id", owner))
		if err := d.removeDir(dir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("logdir: %w", err)
		}
		if err := atomicfile.SyncDir(d.cfg.sync, d.path); err != nil {
			return nil, err
		}
	}
	// A directory made for this topic always holds a segment: its
	// partition.metadata is written only once the first one exists.
	l, err := openLog(d, dir, pointKey{topic, partition}, id, owner == id)
	if err != nil {
		return nil, fmt.Errorf("logdir: open %s-%d: %w", topic, partition, err)
	}
	if owner != id {
		if err := writePartitionMeta(d.cfg.sync, dir, id); err != nil {
			_ = l.close(false)
			return nil, err
		}
	}
	d.noteRecovered(filepath.Base(dir))
	d.mu.Lock()
	closed := d.closed
	if !closed {
		d.logs[l] = struct{}{}
	}
	d.mu.Unlock()
	if closed {
		_ = l.close(false) // outside d.mu: it calls forget
		return nil, ErrClosed
	}
	return l, nil
}

// OpenSegments returns how many sealed segment files the directory's logs
// hold open (at most WithOpenSegments', but for files being read), and
// how many times one was opened again after the cache closed it.
func (d *Dir) OpenSegments() (open, reopened int) { return d.files.open() }

// forget takes a closed log off the flusher.
func (d *Dir) forget(l *Log) {
	d.mu.Lock()
	delete(d.logs, l)
	d.mu.Unlock()
}

// removeDir deletes a partition's directory: renamed first, with a
// "-delete" suffix and the rename made durable, so that a crash leaves
// nothing that opens as the partition; then removed.
func (d *Dir) removeDir(dir string) error {
	var suffix [8]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never fails
	gone := dir + "." + hex.EncodeToString(suffix[:]) + deleteSuffix
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("logdir: %w", err)
	}
	if err := atomicfile.SyncDir(d.cfg.sync, d.path); err != nil {
		return err
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	return nil
}

// finishDeletions removes what a crash cut short: partition directories
// being deleted, files being replaced.
func (d *Dir) finishDeletions() error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	for _, e := range entries {
		left := e.IsDir() && strings.HasSuffix(e.Name(), deleteSuffix) ||
			!e.IsDir() && strings.HasSuffix(e.Name(), atomicfile.TmpSuffix)
		if left {
			if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
				return fmt.Errorf("logdir: %w", err)
			}
		}
	}
	return nil
}

// Close stops the background goroutine and waits for it, closes the logs
// still open (the store closes its own first), writes the recovery
// checkpoint and, if every log closed cleanly, the clean-shutdown marker
// (see clean.go), and releases the directory's lock. Close is idempotent.
func (d *Dir) Close() error {
	var err error
	d.closeOnce.Do(func() {
		// 1. No new logs; the background goroutine stops.
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		close(d.stop)
		<-d.done
		// 2. Close what is left, outside d.mu: Close calls forget.
		d.mu.Lock()
		left := make([]*Log, 0, len(d.logs))
		for l := range d.logs {
			left = append(left, l)
		}
		d.mu.Unlock()
		var errs []error
		for _, l := range left {
			errs = append(errs, l.Close())
		}
		// 3. Every log is fsynced to its end: record it, and that the
		// shutdown was clean, unless something failed.
		d.pointsMu.Lock()
		errs = append(errs, d.writePointsLocked())
		d.pointsMu.Unlock()
		if errors.Join(errs...) == nil && !d.unclean.Load() && d.allRecovered() {
			errs = append(errs, d.markClean())
		}
		// 4. Release the lock for the next process.
		errs = append(errs, d.lock.Close())
		err = errors.Join(errs...)
	})
	return err
}
