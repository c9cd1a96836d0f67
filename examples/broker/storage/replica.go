package storage

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// This file holds what replication asks of a partition: a follower appends
// its leader's batches as they are, takes its high watermark from its
// leader, and truncates its log where it diverged; a leader with followers
// lets its replica manager move the high watermark. Which broker leads is
// the server's business: a partition serves either role, and switches when
// told.

// AppendReplica appends what a follower fetched from its leader: records
// holds zero or more whole v2 record batches back to back, as a Fetch
// response's records field carries them; a trailing batch cut short (fewer
// bytes than its length says) is ignored, as Kafka's followers ignore the
// partial batch a fetch's byte limit leaves at the end.
//
// Every batch is checked as ParseStoredBatch checks it (framing, CRC-32C,
// record count; transactional batches and the leader's transaction
// markers are accepted) before any is appended, and keeps the offsets and
// the leader epoch its leader gave it; max.message.bytes is not checked,
// the leader did. Each must start at the log end: one that does not fails
// with ErrOffsetMismatch, and neither it nor those after it are appended,
// while those before it stay. One exception, Kafka's: an empty log whose
// start is inside the first batch (its leader's log start, which
// DeleteRecords put there, and from which it fetched) restarts at that
// batch's base, its log start kept. Producers' state (sequences, epochs,
// coordinator epochs, open transactions), the transactions' order and the
// aborted index are recorded as the leader recorded them, without its
// checks (the leader made them), so that the follower recognises a retry,
// fences a stale producer or coordinator, and has the leader's last
// stable offset once it leads; the max timestamp is noted, and retention
// applied as Append applies it. The high watermark does not move:
// SetHighWatermark moves it, from the leader's.
//
// The result names the first and last offsets appended (LastOffset <
// BaseOffset when nothing was: BaseOffset is then the log end), also along
// with an error, which wraps ErrCorruptBatch (nothing appended),
// ErrInvalidRecord (likewise), ErrOffsetMismatch,
// ErrDeleted or the Log's error. The checksums are computed before the
// lock is taken. O(len(records)).
func (p *Partition) AppendReplica(records []byte) (AppendResult, error) {
	return p.appendReplica(records, false, 0)
}

// AppendReplicaAt is AppendReplica for a follower's fetch made at leader
// epoch fetchedAt: it appends only if the partition's leader epoch
// (SetLeaderEpoch) is still fetchedAt, checked under the lock the append
// holds, so that a change of leadership lands either before the append,
// which it then refuses, or after it, never between the check and the
// append. A refusal wraps ErrLeaderEpochMoved, and nothing is appended: the
// fetch was answered by a leader this replica no longer follows at that
// epoch, and the follower drops it (Kafka's fetcher drops a response whose
// partition state changed while it was in flight). O(len(records)).
func (p *Partition) AppendReplicaAt(fetchedAt int32, records []byte) (AppendResult, error) {
	return p.appendReplica(records, true, fetchedAt)
}

// appendReplica is AppendReplica, and AppendReplicaAt when checkEpoch.
func (p *Partition) appendReplica(records []byte, checkEpoch bool, fetchedAt int32) (AppendResult, error) {
	batches, err := parseFetched(records)
	if err != nil {
		return AppendResult{}, fmt.Errorf("storage: replicate to %s-%d: %w", p.topic.Name, p.index, err)
	}
	now := p.cfg.clock.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return AppendResult{}, p.errDeleted()
	}
	// SetLeaderEpoch stores under p.mu, so the epoch cannot move between
	// this check and the append below.
	if at := p.leaderEpoch.Load(); checkEpoch && at != fetchedAt {
		end := p.log.Bounds().End
		return AppendResult{BaseOffset: end, LastOffset: end - 1, LogStartOffset: p.startLocked()},
			fmt.Errorf("%w: %s-%d fetched at leader epoch %d, now at %d", ErrLeaderEpochMoved, p.topic.Name, p.index, fetchedAt, at)
	}
	end, restarted, err := p.startInsideLocked(batches)
	if err != nil {
		return AppendResult{BaseOffset: end, LastOffset: end - 1, LogStartOffset: p.startLocked()},
			fmt.Errorf("storage: replicate to %s-%d: %w", p.topic.Name, p.index, err)
	}
	res := AppendResult{BaseOffset: end, LastOffset: end - 1}
	p.setRollLocked() // a follower rolls where its leader does
	for _, b := range batches {
		// A gap is a compacted leader's: its cleaner dropped the
		// batches between (Kafka's follower takes any offset past its
		// log end).
		if b.info.BaseOffset < end {
			err = fmt.Errorf("%w: %s-%d ends at %d, the leader's batch starts at %d",
				ErrOffsetMismatch, p.topic.Name, p.index, end, b.info.BaseOffset)
			break
		}
		owned := b.own(now)
		if err = p.log.Append(owned); err != nil {
			err = fmt.Errorf("storage: replicate to %s-%d: %w", p.topic.Name, p.index, err)
			break
		}
		p.applyLocked(owned.info, now)
		if p.epochs.assign(owned.info.LeaderEpoch, owned.info.BaseOffset) {
			p.epochsChangedLocked()
		}
		res.LastOffset = owned.info.LastOffset
		end = res.LastOffset + 1
	}
	if restarted && p.epochs.truncateFromStart(p.startLocked()) {
		p.epochsChangedLocked() // the cache starts at the log start, not the batch's base
	}
	if res.LastOffset >= res.BaseOffset {
		if rerr := p.retainLocked(now); rerr != nil {
			// As in Append: the batches are in; the sweep retries.
			p.cfg.log.Warn("retention after a replica append", zap.Error(rerr))
		}
	}
	res.LogStartOffset = p.startLocked()
	return res, err
}

// startInsideLocked makes room, in an empty log, for a first batch that
// holds the log start: the leader's log start is inside it, and the
// follower fetched from there after it emptied its log and started it at
// the leader's log start (Kafka's appendRecordsToFollowerOrFutureReplica
// restarts the log at the batch's base on its UnexpectedAppendOffset).
// The log restarts at the batch's base; the log start stays, inside it.
// It returns the log end to append at, and whether it restarted.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) startInsideLocked(batches []*Batch) (int64, bool, error) {
	b := p.log.Bounds()
	if len(batches) == 0 || b.Start != b.End {
		return b.End, false, nil
	}
	first := batches[0].info
	if first.BaseOffset >= b.End || first.LastOffset < b.End {
		return b.End, false, nil
	}
	start := p.startLocked()
	if err := p.log.Reset(first.BaseOffset); err != nil {
		return p.log.Bounds().End, false, err
	}
	p.logStart = start
	return first.BaseOffset, true, p.keepLogStartLocked()
}

// SetHighWatermark sets a follower's high watermark from its leader's, as
// a Fetch response carries it, clamped to the log's start and end offsets:
// the follower may lag its leader, and never exposes offsets it lacks. It
// may move backwards, after a truncation or a change of leader. The last
// stable offset follows it: a transaction whose marker it passes is
// stable. It does nothing to a deleted partition. O(1) plus the
// transactions made stable.
func (p *Partition) SetHighWatermark(hw int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return
	}
	p.setHighWatermarkLocked(min(max(hw, p.startLocked()), p.log.Bounds().End))
}

// SetHighWatermarkManaged says who moves a leader's high watermark: with
// managed true, Append leaves it, and the replica manager moves it with
// AdvanceHighWatermark once the in-sync followers have fetched past it;
// with false (the default, a partition without followers), every Append
// moves it to the log end, and switching to false moves it there at once.
// It does nothing to a deleted partition. O(1).
func (p *Partition) SetHighWatermarkManaged(managed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return
	}
	p.hwManaged = managed
	if !managed {
		p.advanceHighWatermarkLocked()
	}
}

// AdvanceHighWatermark moves a leader's high watermark forward to hw, the
// smallest log end offset among its in-sync replicas, or to the log end if
// hw is past it; it never moves it backwards. moved reports whether it
// moved, so that the caller completes the produces and fetches waiting on
// it only then (the last stable offset moves only with it, or with a
// marker or a truncation). It does nothing to a deleted partition. O(1)
// plus the transactions made stable.
func (p *Partition) AdvanceHighWatermark(hw int64) (moved bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return false
	}
	hw = min(hw, p.log.Bounds().End)
	if hw <= p.highWatermark {
		return false
	}
	p.setHighWatermarkLocked(hw)
	return true
}

// TruncateTo cuts a follower's log back to offset, where it agrees with
// its leader's: no batch is cut when offset is at or past the log end,
// only a leader epoch starting there (see AssignLeaderEpoch). An
// offset inside a batch cuts before that batch (the follower fetches it
// again); one before the log start empties the log and starts it at offset,
// as TruncateFullyAndStartAt does. The high watermark is then at most the
// new log end, and the producers' state, the transactions (one whose
// marker was cut is open again) and the aborted index, and the max
// timestamp are rebuilt from the batches left, as when a log is opened. It fails with ErrDeleted,
// or the Log's error, after which the partition's state still follows what
// the log holds. O(batches left) for the rebuild, plus the Log's cost.
func (p *Partition) TruncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return p.errDeleted()
	}
	b := p.log.Bounds()
	switch {
	case offset >= b.End:
		// No batch to cut, but an epoch this replica recorded when it
		// led, at its log end, without appending a batch of it, goes,
		// as Kafka's truncateTo trims its cache even then: the epoch's
		// leadership left nothing here.
		if p.epochs.truncateFromEnd(b.End) {
			return p.writeEpochsLocked()
		}
		return nil
	case offset < b.Start:
		return p.truncatedLocked(p.log.Reset(offset), "reset", offset)
	}
	// start <= offset < end: a batch holds offset; cut at its base.
	boundary := offset
	if err := p.log.Scan(offset, func(info BatchInfo) bool { boundary = info.BaseOffset; return false }); err != nil {
		return fmt.Errorf("storage: truncate %s-%d to %d: %w", p.topic.Name, p.index, offset, err)
	}
	return p.truncatedLocked(p.log.TruncateTo(boundary), "truncate", boundary)
}

// TruncateFullyAndStartAt empties a follower's log and starts it at offset,
// for a follower whose log is all behind its leader's log start (Kafka's
// truncateFullyAndStartAt): the log start, the log end and the high
// watermark become offset, and the producers' state, the transactions
// and the max timestamp are cleared. It fails with ErrDeleted, an error wrapping
// ErrOffsetOutOfRange for a negative offset, or the Log's error, after
// which the partition's state still follows what the log holds. O(1) plus
// the Log's cost.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return p.errDeleted()
	}
	return p.truncatedLocked(p.log.Reset(offset), "reset", offset)
}

// truncatedLocked brings the partition's state in line with its log after
// a TruncateTo or a Reset, whose error is err: the high watermark within
// the log's offsets, the producers' state, the transactions and the max
// timestamp rebuilt from its batches (none, after a Reset). A durable log may have cut
// batches even when it failed halfway, so this is done either way. what
// and offset name the operation, for the error.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) truncatedLocked(err error, what string, offset int64) error {
	b := p.log.Bounds()
	p.cuts++ // a cleaning pass under way swaps nothing in
	if b.End < p.cleanedTo {
		p.cleanedTo = b.End
		p.writeCleanedLocked()
	}
	// A log start DeleteRecords set is cut back with the log (Kafka's
	// truncateTo keeps min(target, logStartOffset)); after a Reset the
	// log's own start is the log start.
	p.logStart = min(p.logStart, b.End)
	p.setHighWatermarkLocked(min(max(p.highWatermark, p.startLocked()), b.End))
	if err != nil {
		err = fmt.Errorf("storage: %s %s-%d to %d: %w", what, p.topic.Name, p.index, offset, err)
	}
	if werr := p.logStartLoweredLocked(); werr != nil {
		err = errors.Join(err, fmt.Errorf("storage: log start of %s-%d: %w", p.topic.Name, p.index, werr))
	}
	if _, rerr := p.rebuildLocked(); rerr != nil {
		err = errors.Join(err, fmt.Errorf("storage: rebuild %s-%d: %w", p.topic.Name, p.index, rerr))
	}
	// The leader-epoch cache follows the log's bounds: entries of the
	// batches cut go (Kafka's truncateFromEnd); after a Reset the log
	// is empty and so is the cache (Kafka clears it in
	// truncateFullyAndStartAt).
	changed := p.epochs.truncateFromEnd(b.End)
	if b.Start == b.End && len(p.epochs) > 0 {
		p.epochs, changed = nil, true
	}
	if changed {
		if werr := p.writeEpochsLocked(); werr != nil {
			err = errors.Join(err, fmt.Errorf("storage: leader epochs of %s-%d: %w", p.topic.Name, p.index, werr))
		}
	}
	return err
}
