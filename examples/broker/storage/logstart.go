package storage

import (
	"fmt"

	"go.uber.org/zap"
)

// The log start.
//
// Kafka's log start offset is logical (UnifiedLog.logStartOffset): it is
// where the partition's readable records begin, not where its first
// segment does. Retention deletes whole segments and moves it to the base
// of the first one kept; DeleteRecords (KIP-107) moves it to exactly the
// offset its client names, which may fall inside a segment, or inside a
// batch. The batches before it stay until retention takes their segment,
// but they are no longer the partition's: a fetch below the log start is
// OFFSET_OUT_OF_RANGE, ListOffsets' earliest is the log start, a fetch
// response carries it, and a follower takes it from there. A batch that
// straddles it is served whole to a fetch at an offset inside it, as
// Kafka serves it; the consumer skips the records before its offset.
//
// The partition keeps the logical start in logStart; the log start it
// answers with is the larger of it and the log's first offset
// (startLocked), so that retention moving the log's first offset past it
// needs no bookkeeping. A Log that is a LogStartCheckpointer (logdir's)
// keeps it across restarts: it is written whenever the log start moves
// past the log's first offset, before the move is answered, and when a
// truncation lowers it below what was written. Kafka writes its
// log-start-offset-checkpoint lazily, every
// log.flush.start.offset.checkpoint.interval.ms, and counts on the other
// replicas to keep what a crash lost; a broker alone here has nothing
// else, and a DeleteRecords is rare, so the checkpoint is written first.

// A LogStartCheckpointer is a Log that keeps its partition's log start
// across restarts (logdir's Log, in its log-start-offset-checkpoint file),
// when DeleteRecords moved it past the log's first offset. Partition calls
// it under its write lock, as the Log's other writes: ReadLogStart once
// when it opens the log, WriteLogStart whenever the log start moves past
// the log's first offset, or back below what was written.
type LogStartCheckpointer interface {
	// ReadLogStart returns the log start kept, found false when none
	// was.
	ReadLogStart() (offset int64, found bool, err error)
	// WriteLogStart replaces the log start kept with offset.
	WriteLogStart(offset int64) error
}

// startLocked returns the log start: the logical start DeleteRecords set,
// or the log's first offset if retention moved it further. O(1).
//
// REQUIRES: p.mu held.
func (p *Partition) startLocked() int64 { return max(p.logStart, p.log.Bounds().Start) }

// recoverLogStartLocked takes the log start a durable log kept, never past
// the log end: a log opened with a torn tail cut may end before it.
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) recoverLogStartLocked() error {
	cp, ok := p.log.(LogStartCheckpointer)
	if !ok {
		return nil
	}
	kept, found, err := cp.ReadLogStart()
	if err != nil || !found {
		return err
	}
	p.keptStart = kept
	p.logStart = min(kept, p.log.Bounds().End)
	return nil
}

// keepLogStartLocked writes the log start to the log's checkpoint, if it
// keeps one and the log's first offset does not say as much: a log start
// inside the first segment kept.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) keepLogStartLocked() error {
	cp, ok := p.log.(LogStartCheckpointer)
	start := p.startLocked()
	if !ok || start == p.keptStart || start == p.log.Bounds().Start {
		return nil
	}
	if err := cp.WriteLogStart(start); err != nil {
		return err
	}
	p.keptStart = start
	return nil
}

// logStartLoweredLocked rewrites the checkpoint after a truncation that
// took the log start below it, so that a restart does not bring back a log
// start the log no longer has. O(1) unless it writes.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) logStartLoweredLocked() error {
	cp, ok := p.log.(LogStartCheckpointer)
	start := p.startLocked()
	if !ok || p.keptStart <= start {
		return nil
	}
	if err := cp.WriteLogStart(start); err != nil {
		return err
	}
	p.keptStart = start
	return nil
}

// AdvanceLogStart moves the log start forward to offset, but never past
// the high watermark nor the log end: a leader whose records before offset
// are superseded (the group coordinator after it rewrote an offsets
// partition's live records), or a follower taking its leader's log start
// from a fetch response, so that its copy starts where the leader's does.
// The log start becomes offset exactly, inside a batch if it falls there
// (see above); the segments wholly before it are deleted, as retention
// deletes them. An offset at or before the start does nothing. It returns
// the log start after, or ErrDeleted, or the Log's error. O(segments
// deleted), plus the rescan of the log when the batch with the largest
// timestamp goes, plus the checkpoint's write when it keeps one.
func (p *Partition) AdvanceLogStart(offset int64) (int64, error) {
	// A follower calls it at every fetch response, and nearly always the
	// leader's log start has not moved: that is decided under the read
	// lock, which fetches reading the log share, before the write lock.
	p.mu.RLock()
	if !p.deleted {
		if start := p.startLocked(); min(offset, p.highWatermark, p.log.Bounds().End) <= start {
			p.mu.RUnlock()
			return start, nil
		}
	}
	p.mu.RUnlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return 0, p.errDeleted()
	}
	return p.advanceLogStartLocked(min(offset, p.highWatermark, p.log.Bounds().End))
}

// DeleteRecords moves the log start forward to exactly offset, as a
// DeleteRecords request asks the partition's leader (KIP-107, Kafka's
// deleteRecordsOnLeader and maybeIncrementLogStartOffset): the records
// before it are no longer served, and the segments wholly before it are
// deleted. An offset past the high watermark, or negative, fails with
// ErrOffsetOutOfRange; one at or before the log start changes nothing.
// It returns the log start after (offset, or the log start if that was
// further), or ErrDeleted, or the Log's error. Its cost is
// AdvanceLogStart's.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return 0, p.errDeleted()
	}
	if offset < 0 || offset > p.highWatermark {
		return p.startLocked(), fmt.Errorf("%w: delete records of %s-%d before %d, past its high watermark %d",
			ErrOffsetOutOfRange, p.topic.Name, p.index, offset, p.highWatermark)
	}
	return p.advanceLogStartLocked(offset)
}

// advanceLogStartLocked makes to the log start if it is past it, to being
// at most the high watermark: it deletes the segments before it, brings
// the partition's state in line (dropBeforeLocked: the leader-epoch cache,
// the aborted index), and keeps the new start in the log's checkpoint. It
// returns the log start after.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) advanceLogStartLocked(to int64) (int64, error) {
	if to <= p.startLocked() {
		return p.startLocked(), nil
	}
	size := p.log.Bounds().Size
	p.logStart = to
	err := p.dropBeforeLocked(to)
	if err == nil {
		err = p.keepLogStartLocked()
	}
	if err != nil {
		return p.startLocked(), fmt.Errorf("storage: advance the log start of %s-%d to %d: %w", p.topic.Name, p.index, to, err)
	}
	p.cfg.log.Debug("log start advanced", zap.String("topic", p.topic.Name), zap.Int32("partition", p.index),
		zap.Int64("log_start_offset", to), zap.Int64("bytes_deleted", size-p.log.Bounds().Size))
	return to, nil
}
