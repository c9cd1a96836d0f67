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
// kept. A topic whose cleanup.policy is compact alone keeps everything
// (its cleaner bounds it). When every batch goes the log start is the log end. O(segments
// deleted), plus the rescan of the log when the batch with the largest
// timestamp goes.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) retainLocked(now time.Time) error {
	c := p.topic.Config() // once: a change meanwhile applies at the next sweep
	if !c.Cleanup.Deletes() || c.Retention < 0 && c.RetentionBytes < 0 {
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
			zap.Int64("log_start_offset", p.startLocked()), zap.Int64("bytes_deleted", b.Size-p.log.Bounds().Size))
	}
	if err != nil {
		return fmt.Errorf("storage: retention of %s-%d: %w", p.topic.Name, p.index, err)
	}
	return nil
}

// dropBeforeLocked deletes the segments that end before to (Log's
// DropBefore), and brings the leader-epoch cache, the aborted index and
// the max timestamp in line with the new log start: the cache and the
// index with the log start (which DeleteRecords may have set past the
// first batch kept), the max timestamp with the batches kept.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) dropBeforeLocked(to int64) error {
	err := p.log.DropBefore(to)
	p.txns.dropBefore(p.startLocked())
	if p.epochs.truncateFromStart(p.startLocked()) {
		p.epochsChangedLocked()
	}
	start := p.log.Bounds().Start
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
