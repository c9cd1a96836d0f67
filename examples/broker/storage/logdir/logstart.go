package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// logStartName is the partition's log start, kept when DeleteRecords moved
// it past the first offset of its first segment: a version line (0), then
// the offset. Kafka keeps every partition's in one file per log dir,
// log-start-offset-checkpoint, written lazily; here each partition
// directory has its own, written when the log start moves (see package
// storage, logstart.go), as its leader-epoch-checkpoint is.
const logStartName = "log-start-offset-checkpoint"

var _ storage.LogStartCheckpointer = (*Log)(nil)

// ReadLogStart returns the log start in the partition's
// log-start-offset-checkpoint; found is false when it has none. A file
// that is not in its format is an error, which fails the partition's open:
// the records before the log start would be served again.
func (l *Log) ReadLogStart() (int64, bool, error) { return l.readOffsetFile(logStartName) }

// WriteLogStart replaces the partition's log-start-offset-checkpoint with
// offset, atomically (a temporary file, fsynced, renamed, the directory
// fsynced).
func (l *Log) WriteLogStart(offset int64) error { return l.writeOffsetFile(logStartName, offset) }

// readOffsetFile returns the offset in the partition's file name, a
// version line (0) then the offset; found is false when there is none.
func (l *Log) readOffsetFile(name string) (int64, bool, error) {
	path := filepath.Join(l.dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("logdir: %w", err)
	}
	version, text, ok := strings.Cut(strings.TrimSuffix(string(data), "\n"), "\n")
	offset, err := strconv.ParseInt(text, 10, 64)
	if !ok || version != "0" || err != nil || offset < 0 {
		return 0, false, fmt.Errorf("%w: %s is not a version 0 offset: %q", ErrInconsistent, path, data)
	}
	return offset, true, nil
}

// writeOffsetFile replaces the partition's file name with offset,
// atomically (a temporary file, fsynced, renamed, the directory fsynced).
func (l *Log) writeOffsetFile(name string, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return atomicfile.Write(l.cfg.sync, filepath.Join(l.dir, name), fmt.Appendf(nil, "0\n%d\n", offset))
}
