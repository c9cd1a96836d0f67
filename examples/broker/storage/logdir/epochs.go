package logdir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// epochCheckpointName is the partition's leader-epoch cache, in Kafka's
// LeaderEpochCheckpointFile format: the version (0), the number of
// entries, then one "epoch start_offset" line per entry.
const epochCheckpointName = "leader-epoch-checkpoint"

var _ storage.EpochCheckpointer = (*Log)(nil)

// ReadLeaderEpochs returns the entries of the partition's
// leader-epoch-checkpoint; found is false when it has none. A file that
// is not Kafka's format is an error; storage.Partition then rebuilds the
// cache from the batches.
func (l *Log) ReadLeaderEpochs() ([]storage.EpochEntry, bool, error) {
	data, err := os.ReadFile(filepath.Join(l.dir, epochCheckpointName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("logdir: %w", err)
	}
	entries, err := parseEpochCheckpoint(data)
	if err != nil {
		return nil, false, fmt.Errorf("logdir: %s: %w", filepath.Join(l.dir, epochCheckpointName), err)
	}
	return entries, true, nil
}

// WriteLeaderEpochs replaces the partition's leader-epoch-checkpoint with
// entries, atomically (a temporary file, fsynced, renamed, the directory
// fsynced). Kafka writes it on every change too: a change comes with a
// new leader epoch or a truncation, rare next to appends.
func (l *Log) WriteLeaderEpochs(entries []storage.EpochEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return atomicfile.Write(l.cfg.sync, filepath.Join(l.dir, epochCheckpointName), formatEpochCheckpoint(entries))
}

func formatEpochCheckpoint(entries []storage.EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func parseEpochCheckpoint(data []byte) ([]storage.EpochEntry, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, errors.New("not a version 0 checkpoint")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("count %q for %d entries", lines[1], len(lines)-2)
	}
	entries := make([]storage.EpochEntry, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("entry %q", line)
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		offset, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("entry %q", line)
		}
		entries = append(entries, storage.EpochEntry{Epoch: int32(epoch), StartOffset: offset})
	}
	return entries, nil
}
