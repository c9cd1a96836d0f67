package storage

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// retainLocked deletes the oldest segments that its topic's retention no
// longer keeps, whole, as Kafka deletes segment files (in the memory log a
// batch is a segment): a segment goes while its age, from the largest max
// timestamp of its batches, exceeds retention.ms, or while the partition
// stays at or above retention.bytes without it. Only segments below the
// high watermark go: one holding a batch that a replica still lacks is
// kept. When every batch goes the log start is the log end. O(segments
// deleted), plus the rescan of the log when the batch with the largest
// timestamp goes.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) retainLocked(now time.Time) error {
	c := p.topic.Config
	if c.Retention < 0 && c.RetentionBytes < 0 {
		return nil
	}
	b := p.log.Bounds()
	nowMs, size, to := now.UnixMilli(), b.Size, b.Start
	err := p.log.Segments(func(s Segment) bool {
		if s.NextOffset > p.highWatermark {
			return false
		}
		expired := c.Retention >= 0 && nowMs-s.MaxTime > c.Retention.Milliseconds()
		oversize := c.RetentionBytes >= 0 && size-s.Size >= c.RetentionBytes
		if !expired && !oversize {
			return false
		}
		size -= s.Size
		to = s.NextOffset
		return true
	})
	if err == nil && to > b.Start {
		err = p.dropBeforeLocked(to)
		p.cfg.log.Debug("retention deleted segments", zap.String("topic", p.topic.Name), zap.Int32("partition", p.index),
			zap.Int64("log_start_offset", p.log.Bounds().Start), zap.Int64("bytes_deleted", b.Size-p.log.Bounds().Size))
	}
	if err != nil {
		return fmt.Errorf("storage: retention of %s-%d: %w", p.topic.Name, p.index, err)
	}
	return nil
}

// dropBeforeLocked deletes the segments that end before to (Log's
// DropBefore), and brings the leader-epoch cache, the aborted index and
// the max timestamp in line with the new log start.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) dropBeforeLocked(to int64) error {
	err := p.log.DropBefore(to)
	start := p.log.Bounds().Start
	p.txns.dropBefore(start)
	if p.epochs.truncateFromStart(start) {
		p.epochsChangedLocked()
	}
	if err == nil && p.maxTimestamp.Size > 0 && p.maxTimestamp.BaseOffset < start {
		if max, last := p.maxTimestamp.MaxTimestamp, p.maxTimeLast; last >= start {
			// A batch with the same max timestamp is kept: the first
			// of them is the new one, found from the start (batches
			// with equal timestamps, or none, make this the common
			// case: a whole rescan at every drop would make size
			// retention quadratic).
			_ = p.log.Scan(start, func(info BatchInfo) bool {
				if info.MaxTimestamp == max {
					p.maxTimestamp = info
					return false
				}
				return true
			})
		} else {
			p.maxTimestamp = BatchInfo{} // found again
			_ = p.log.Scan(start, func(info BatchInfo) bool { p.noteTimestampLocked(info); return true })
		}
	}
	return err
}

// AdvanceLogStart moves the log start forward to offset, but never past
// the high watermark (Kafka's maybeIncrementLogStartOffset): a leader
// whose records before offset are superseded (the group coordinator after
// it rewrote an offsets partition's live records), or a follower taking
// its leader's log start from a fetch response, so that its copy is
// bounded as the leader's is. Whole segments go, as retention deletes
// them (in the memory log a batch is a segment): the start stays at the
// base of the segment holding offset. An offset at or before the start
// does nothing. It returns the log start after, or ErrDeleted, or the
// Log's error. O(segments deleted), plus the rescan of the log when the
// batch with the largest timestamp goes.
func (p *Partition) AdvanceLogStart(offset int64) (int64, error) {
	// A follower calls it at every fetch response, and nearly always the
	// leader's log start has not moved: that is decided under the read
	// lock, which fetches reading the log share, before the write lock.
	p.mu.RLock()
	if !p.deleted {
		if b := p.log.Bounds(); min(offset, p.highWatermark, b.End) <= b.Start {
			p.mu.RUnlock()
			return b.Start, nil
		}
	}
	p.mu.RUnlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return 0, p.errDeleted()
	}
	b := p.log.Bounds()
	to := min(offset, p.highWatermark, b.End)
	if to <= b.Start {
		return b.Start, nil
	}
	if err := p.dropBeforeLocked(to); err != nil {
		return p.log.Bounds().Start, fmt.Errorf("storage: advance the log start of %s-%d to %d: %w", p.topic.Name, p.index, to, err)
	}
	start := p.log.Bounds().Start
	p.cfg.log.Debug("log start advanced", zap.String("topic", p.topic.Name), zap.Int32("partition", p.index),
		zap.Int64("log_start_offset", start), zap.Int64("bytes_deleted", b.Size-p.log.Bounds().Size))
	return start, nil
}

// sweep applies retention and expires idle producers (never one with an
// open transaction), as the periodic check does.
func (p *Partition) sweep(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return nil
	}
	if p.cfg.producerExpiry >= 0 {
		p.producers.expire(now.Add(-p.cfg.producerExpiry))
	}
	return p.retainLocked(now)
}

// Sweep applies every partition's retention now, and forgets producers idle
// past their expiry; the store's own goroutine calls it every retention
// check interval (log.retention.check.interval.ms). It returns the first
// error met; it goes on after one. O(partitions + batches deleted).
func (s *Store) Sweep() error {
	now := s.cfg.clock.Now()
	var first error
	for _, t := range s.Topics() {
		for _, p := range t.Partitions {
			if err := p.sweep(now); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// sweepEvery runs Sweep every interval until stop is closed.
func (s *Store) sweepEvery(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			if err := s.Sweep(); err != nil {
				s.cfg.log.Warn("retention sweep", zap.Error(err))
			}
		}
	}
}
