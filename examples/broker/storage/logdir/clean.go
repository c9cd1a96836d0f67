package logdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// What a recovery may cut.
//
// Only the end of a log being appended to can be torn by a crash: a batch
// half written, or pages the disk never got. Recovery may cut such a
// tail, and only there; anything else that does not read back is
// corruption, and the log refuses to open rather than drop acknowledged
// batches (see the package doc, # Recovery). Two files say where a tail
// may be torn, as in Kafka:
//
//   - .kafka_cleanshutdown, written by Close once every log was closed,
//     everything fsynced, nothing failed, and every partition directory
//     was recovered since Open (a broker that failed to start leaves the
//     logs it did not reach as they were); deleted (durably) by Open
//     before anything is written. After a clean shutdown no tail is torn: any batch that does
//     not read back refuses the start, with its file, position and offset.
//   - recovery-point-offset-checkpoint: each partition's recovery point,
//     the offset below which everything was fsynced (Kafka's, with the
//     topic id added, so that a topic deleted and created again under the
//     same name does not take the old one's). After an unclean shutdown,
//     a tail may be cut only at or past it. It is written every
//     log.flush.offset.checkpoint.interval.ms (Kafka's default: a minute),
//     by Close, and before a truncation lowers a recovery point, so that
//     it is never past what a log holds. A recovery point older than the
//     last fsync only lets recovery cut less safely than it could: Kafka
//     checkpoints as lazily.
//
// The format of the checkpoint: a version line (1), a count line, then per
// partition "topic partition recovery-point topic-id".
const (
	cleanShutdownName  = ".kafka_cleanshutdown"
	recoveryPointsName = "recovery-point-offset-checkpoint"
	recoveryVersion    = 1
)

// A pointKey names a partition's log in the checkpoint.
type pointKey struct {
	topic     string
	partition int32
}

// A recoveryPoint is a log's: the topic id whose log it is, and the
// offset below which it is fsynced.
type recoveryPoint struct {
	id     storage.TopicID
	offset int64
}

// loadRecovery reads what the last shutdown left: whether it was clean,
// and the recovery points; then it deletes the marker, durably, so that a
// crash from now on is unclean.
func (d *Dir) loadRecovery() error {
	marker := filepath.Join(d.path, cleanShutdownName)
	_, err := os.Stat(marker)
	switch {
	case err == nil:
		d.clean = true
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("logdir: %w", err)
	}
	if d.points, err = readRecoveryPoints(filepath.Join(d.path, recoveryPointsName)); err != nil {
		return err
	}
	if d.clean {
		if err := os.Remove(marker); err != nil {
			return fmt.Errorf("logdir: %w", err)
		}
		if err := atomicfile.SyncDir(d.cfg.sync, d.path); err != nil {
			return err
		}
	}
	return nil
}

// readRecoveryPoints reads the checkpoint; none is no error (a log dir
// made before it, or a broker that never checkpointed).
func readRecoveryPoints(path string) (map[pointKey]recoveryPoint, error) {
	points := make(map[pointKey]recoveryPoint)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return points, nil
	}
	if err != nil {
		return nil, fmt.Errorf("logdir: %w", err)
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s: %s", ErrInconsistent, path, why) }
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || lines[0] != strconv.Itoa(recoveryVersion) {
		return nil, bad("not a version 1 checkpoint")
	}
	if n, err := strconv.Atoi(lines[1]); err != nil || n != len(lines)-2 {
		return nil, bad("its count disagrees with its lines")
	}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, bad(fmt.Sprintf("line %q", line))
		}
		partition, perr := strconv.ParseInt(f[1], 10, 32)
		offset, oerr := strconv.ParseInt(f[2], 10, 64)
		id, ierr := storage.ParseTopicID(f[3])
		if perr != nil || oerr != nil || ierr != nil || offset < 0 {
			return nil, bad(fmt.Sprintf("line %q", line))
		}
		points[pointKey{f[0], int32(partition)}] = recoveryPoint{id: id, offset: offset}
	}
	return points, nil
}

// recoveryPointOf returns the recovery point recorded for a partition of
// topic id, or -1 if none is (another topic's of the same name is none).
func (d *Dir) recoveryPointOf(k pointKey, id storage.TopicID) int64 {
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	if p, ok := d.points[k]; ok && p.id == id {
		return p.offset
	}
	return -1
}

// notePoint records a log's recovery point, for the next checkpoint.
func (d *Dir) notePoint(k pointKey, p recoveryPoint) {
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	if old, ok := d.points[k]; !ok || old != p {
		d.points[k] = p
		d.pointsDirty = true
	}
}

// lowerPoint records a lower recovery point for a log about to be cut,
// and writes the checkpoint now: a crash during the cut must not find a
// recovery point past what the log holds.
func (d *Dir) lowerPoint(k pointKey, p recoveryPoint) error {
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	if old, ok := d.points[k]; ok && old.id == p.id && old.offset <= p.offset {
		return nil
	}
	d.points[k] = p
	return d.writePointsLocked()
}

// forgetPoint drops a removed log's recovery point.
func (d *Dir) forgetPoint(k pointKey) {
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	if _, ok := d.points[k]; ok {
		delete(d.points, k)
		d.pointsDirty = true
	}
}

// checkpoint writes the recovery points if any changed since the last
// write.
func (d *Dir) checkpoint() error {
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	if !d.pointsDirty {
		return nil
	}
	return d.writePointsLocked()
}

// writePointsLocked writes the checkpoint, atomically.
//
// REQUIRES: d.pointsMu held.
func (d *Dir) writePointsLocked() error {
	keys := make([]pointKey, 0, len(d.points))
	for k := range d.points {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].topic < keys[j].topic || keys[i].topic == keys[j].topic && keys[i].partition < keys[j].partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", recoveryVersion, len(keys))
	for _, k := range keys {
		p := d.points[k]
		fmt.Fprintf(&b, "%s %d %d %s\n", k.topic, k.partition, p.offset, p.id)
	}
	if err := atomicfile.Write(d.cfg.sync, filepath.Join(d.path, recoveryPointsName), b.Bytes()); err != nil {
		return err
	}
	d.pointsDirty = false
	return nil
}

// noteRecovered records that the partition directory name was opened,
// and so recovered, since Open.
func (d *Dir) noteRecovered(name string) {
	d.pointsMu.Lock()
	d.recovered[name] = true
	d.pointsMu.Unlock()
}

// allRecovered reports whether every partition directory was recovered
// since Open: one that was not (a broker that failed to start, stopping
// at a log it could not open) may still hold a torn tail, which a start
// after a clean marker would take for corruption.
func (d *Dir) allRecovered() bool {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return false
	}
	d.pointsMu.Lock()
	defer d.pointsMu.Unlock()
	for _, e := range entries {
		if e.IsDir() && partitionDirName.MatchString(e.Name()) && !d.recovered[e.Name()] {
			d.cfg.log.Info("no clean shutdown recorded: a partition was not recovered since the start",
				zap.String("dir", filepath.Join(d.path, e.Name())))
			return false
		}
	}
	return true
}

// markClean writes the clean-shutdown marker: every log is closed, all of
// it fsynced, and the checkpoint written.
func (d *Dir) markClean() error {
	f, err := os.OpenFile(filepath.Join(d.path, cleanShutdownName), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("logdir: %w", err)
	}
	err = d.cfg.sync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(d.cfg.sync, d.path)
	}
	if err != nil {
		return fmt.Errorf("logdir: write %s: %w", cleanShutdownName, err)
	}
	d.cfg.log.Info("clean shutdown recorded", zap.String("dir", d.path))
	return nil
}

// CleanShutdown reports whether the directory was closed cleanly before
// this Open: every log fsynced and closed, nothing failed. Then no file in
// it may have a torn tail, and one that does is corruption.
func (d *Dir) CleanShutdown() bool { return d.clean }

// MarkUnclean makes Close leave no clean-shutdown marker: something kept
// in the directory besides its logs failed to close cleanly.
func (d *Dir) MarkUnclean() { d.unclean.Store(true) }
