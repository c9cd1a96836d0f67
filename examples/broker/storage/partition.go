package storage

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Isolation says how far a read may go.
type Isolation int8

const (
	// ReadUncommitted reads up to the high watermark: what every in-sync
	// replica has (Kafka's READ_UNCOMMITTED).
	ReadUncommitted Isolation = iota
	// ReadCommitted reads up to the last stable offset (READ_COMMITTED).
	// Without transactions it equals the high watermark.
	ReadCommitted
	// ReadReplica reads up to the log end offset, as a follower does.
	ReadReplica
)

// Offsets are a partition's offsets, Kafka's names for them.
type Offsets struct {
	LogStart      int64 // the first offset kept
	HighWatermark int64 // every in-sync replica has the offsets below it
	LastStable    int64 // below it no transaction is open: the high watermark here
	LogEnd        int64 // the offset the next batch gets
}

// limit returns the offset a read with iso stops before.
func (o Offsets) limit(iso Isolation) int64 {
	switch iso {
	case ReadCommitted:
		return o.LastStable
	case ReadReplica:
		return o.LogEnd
	default:
		return o.HighWatermark
	}
}

// A Partition is one partition of a topic: its log, its high watermark, its
// producers' sequence state. Its methods are safe for concurrent use.
//
// Lock order: Store.mu, then Partition.mu; the Log is only called under
// Partition.mu. Nothing is called out while mu is held.
type Partition struct {
	topic *Topic  // immutable
	index int32   // immutable
	cfg   *config // the store's, immutable

	// leaderEpoch is the epoch of the partition's leadership, as the
	// cluster's metadata last said (SetLeaderEpoch): Append writes it into
	// the batches it places. A follower's batches keep the epoch their
	// leader wrote (AppendReplica). It is read lock-free, and stored only
	// under mu, so that AppendReplicaAt's check holds through its append.
	leaderEpoch atomic.Int32

	mu            sync.RWMutex // guards the following
	log           Log
	highWatermark int64
	hwManaged     bool // the replica manager moves the high watermark, not Append (SetHighWatermarkManaged)
	producers     producers
	maxTimestamp  BatchInfo    // the kept batch with the largest max timestamp; Size 0 when none
	maxTimeLast   int64        // the base offset of the last kept batch with that max timestamp
	epochs        leaderEpochs // the leader-epoch cache (epochs.go)
	deleted       bool
}

// openPartition opens partition index of t on log. A log that is not empty
// (a durable one, reopened) is taken as fully acknowledged, and its batches
// rebuild the producers' state and the max timestamp, as Kafka rebuilds its
// producer state from the log on recovery.
func openPartition(t *Topic, index int32, cfg *config, log Log) (*Partition, error) {
	// A partition with followers has its high watermark moved by its
	// replica manager from the start, so that no append slips past it.
	p := &Partition{topic: t, index: index, cfg: cfg, log: log, hwManaged: t.ReplicationFactor > 1}
	p.highWatermark = log.Bounds().End
	scanned, err := p.rebuildLocked()
	if err != nil {
		return nil, fmt.Errorf("storage: recover %s-%d: %w", t.Name, index, err)
	}
	if err := p.recoverEpochsLocked(scanned); err != nil {
		return nil, fmt.Errorf("storage: recover the leader epochs of %s-%d: %w", t.Name, index, err)
	}
	return p, nil
}

// recoverEpochsLocked sets the leader-epoch cache of a log just opened to
// scanned, the cache its batches rebuild, and checks it against the
// checkpoint a durable log keeps: every batch is read at open anyway, so
// the batches are the authority, and a checkpoint that disagrees with them
// (written before a torn tail was cut, or lost) is replaced, with a
// warning. The checkpoint's entries at or past the log end are dropped
// first, as Kafka's recovery truncates its cache to the log end: a leader
// records its epoch at its log end before any batch of it is appended
// (AssignLeaderEpoch), and takes it again when it leads again.
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) recoverEpochsLocked(scanned leaderEpochs) error {
	p.epochs = scanned
	cp, ok := p.log.(EpochCheckpointer)
	if !ok {
		return nil
	}
	kept, found, err := cp.ReadLeaderEpochs()
	if err == nil {
		err = validEpochs(kept)
	}
	if err != nil {
		p.cfg.log.Warn("unreadable leader-epoch checkpoint: rebuilt from the batches",
			zap.String("topic", p.topic.Name), zap.Int32("partition", p.index), zap.Error(err))
	} else {
		c := leaderEpochs(kept)
		c.truncateFromEnd(p.log.Bounds().End)
		if found && slices.Equal(c, scanned) {
			if len(c) < len(kept) {
				return p.writeEpochsLocked()
			}
			return nil
		}
		if found {
			p.cfg.log.Warn("the leader-epoch checkpoint disagrees with the batches: rebuilt from them",
				zap.String("topic", p.topic.Name), zap.Int32("partition", p.index),
				zap.Any("checkpoint", kept), zap.Any("batches", scanned))
		}
	}
	return p.writeEpochsLocked()
}

// writeEpochsLocked persists the leader-epoch cache, if the log keeps
// one.
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) writeEpochsLocked() error {
	cp, ok := p.log.(EpochCheckpointer)
	if !ok {
		return nil
	}
	return cp.WriteLeaderEpochs(slices.Clone(p.epochs))
}

// epochsChangedLocked persists the cache after a change made along with an
// append or a truncation. A failure is logged, not returned: the batches
// are written, and the next open rebuilds the cache from them.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) epochsChangedLocked() {
	if err := p.writeEpochsLocked(); err != nil {
		p.cfg.log.Warn("writing the leader-epoch checkpoint", zap.String("topic", p.topic.Name),
			zap.Int32("partition", p.index), zap.Error(err))
	}
}

// rebuildLocked rebuilds the producers' state and the max-timestamp batch
// from the log's batches, forgetting what they were: on opening a log, and
// after a truncation removed batches they may name. A producer whose
// batches are all gone is forgotten, as after a restart. It returns the
// leader-epoch cache the batches make, which opening a log checks its
// checkpoint against. O(batches).
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) rebuildLocked() (leaderEpochs, error) {
	p.producers = newProducers(p.cfg.producerBatches)
	p.maxTimestamp = BatchInfo{}
	var epochs leaderEpochs
	err := p.log.Scan(p.log.Bounds().Start, func(info BatchInfo) bool {
		if info.hasProducer() {
			p.producers.record(info, time.UnixMilli(info.AppendTime))
		}
		p.noteTimestampLocked(info)
		epochs.assign(info.LeaderEpoch, info.BaseOffset)
		return true
	})
	return epochs, err
}

// Topic returns the partition's topic.
func (p *Partition) Topic() *Topic { return p.topic }

// Index returns the partition's number in its topic.
func (p *Partition) Index() int32 { return p.index }

// LeaderEpoch returns the epoch of the partition's leadership. O(1),
// lock-free.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// SetLeaderEpoch sets the epoch of the partition's leadership, which the
// cluster's metadata gives it (0 for a broker alone). It takes the
// partition's lock, so that it never lands inside an AppendReplicaAt (which
// checks the epoch and appends in one step); O(1) once the lock is held.
func (p *Partition) SetLeaderEpoch(epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch.Store(epoch)
}

// Deleted reports whether the partition's topic was deleted.
func (p *Partition) Deleted() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.deleted
}

// Offsets returns the partition's offsets, or ErrDeleted.
func (p *Partition) Offsets() (Offsets, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return Offsets{}, p.errDeleted()
	}
	return p.offsetsLocked(), nil
}

// REQUIRES: p.mu held.
func (p *Partition) offsetsLocked() Offsets {
	b := p.log.Bounds()
	return Offsets{LogStart: b.Start, HighWatermark: p.highWatermark, LastStable: p.highWatermark, LogEnd: b.End}
}

func (p *Partition) errDeleted() error {
	return fmt.Errorf("%w: %s-%d", ErrDeleted, p.topic.Name, p.index)
}

// AppendResult is where an appended batch went.
type AppendResult struct {
	BaseOffset, LastOffset int64
	LogStartOffset         int64
	// Duplicate is set when the batch was a retry of one already in the
	// log: nothing was appended, and the offsets are the original's.
	Duplicate bool
}

// Append validates raw as a client's record batch (see ParseBatch), and
// its records, decompressed to at most the topic's max.message.bytes (see
// records.go), checks its producer's sequence, and appends it at the log
// end, its base offset and leader epoch written in. Once appended, raw is
// the log's: written in place and kept (an in-memory log keeps it and its
// whole backing array), so the caller must not modify it, nor append it
// again; a caller whose raw is a small part of a large buffer passes a
// copy. It then moves the high watermark
// to the log end, unless the replica manager moves it
// (SetHighWatermarkManaged), and applies the size and time retention (a
// failure there is logged, not returned: the batch is in, and failing would
// make its producer send it again). It returns an error wrapping ErrBatchTooLarge, ErrCorruptBatch,
// ErrInvalidRecord, ErrInvalidProducerEpoch,
// ErrOutOfOrderSequence or ErrDeleted, or the Log's error. The checksum is
// computed, and the records walked, before the lock is taken.
func (p *Partition) Append(raw []byte) (AppendResult, error) {
	// The size first, as Kafka: a batch too large is refused without
	// checksumming it.
	if max := p.topic.Config.MaxMessageBytes; len(raw) > int(max) {
		return AppendResult{}, fmt.Errorf("%w: %d bytes, max.message.bytes is %d", ErrBatchTooLarge, len(raw), max)
	}
	b, err := ParseBatch(raw)
	if err != nil {
		return AppendResult{}, err
	}
	if err := p.cfg.validateBatch(b, int(p.topic.Config.MaxMessageBytes)); err != nil {
		return AppendResult{}, err
	}
	now := p.cfg.clock.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return AppendResult{}, p.errDeleted()
	}
	if b.info.hasProducer() {
		dup, isDup, err := p.producers.check(b.info)
		if err != nil {
			return AppendResult{}, fmt.Errorf("%s-%d: %w", p.topic.Name, p.index, err)
		}
		if isDup {
			// Kafka answers a retried batch with success and the offset
			// it was first written at, so the producer moves on.
			return AppendResult{BaseOffset: dup.BaseOffset, LastOffset: dup.LastOffset,
				LogStartOffset: p.log.Bounds().Start, Duplicate: true}, nil
		}
	}
	placed := b.place(p.log.Bounds().End, p.leaderEpoch.Load(), now)
	if err := p.log.Append(placed); err != nil {
		return AppendResult{}, fmt.Errorf("storage: append to %s-%d: %w", p.topic.Name, p.index, err)
	}
	if placed.info.hasProducer() {
		p.producers.record(placed.info, now)
	}
	if p.epochs.assign(placed.info.LeaderEpoch, placed.info.BaseOffset) {
		p.epochsChangedLocked()
	}
	p.noteTimestampLocked(placed.info)
	if !p.hwManaged {
		p.advanceHighWatermarkLocked()
	}
	if err := p.retainLocked(now); err != nil {
		// The batch is appended: failing the append now would make
		// its producer send it again. The periodic sweep retries.
		p.cfg.log.Warn("retention after an append", zap.Error(err))
	}
	return AppendResult{BaseOffset: placed.info.BaseOffset, LastOffset: placed.info.LastOffset,
		LogStartOffset: p.log.Bounds().Start}, nil
}

// advanceHighWatermarkLocked moves the high watermark to the log end: the
// smallest log end offset among the in-sync replicas (Kafka's
// maybeIncrementLeaderHW) when the leader is the only one. With followers,
// the replica manager computes it from their fetched positions and calls
// AdvanceHighWatermark instead; a produce waiting for acks=all is answered
// when the watermark passes its batch.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) advanceHighWatermarkLocked() {
	if end := p.log.Bounds().End; end > p.highWatermark {
		p.highWatermark = end
	}
}

// noteTimestampLocked keeps the batch with the largest max timestamp, for
// ListOffsets' max-timestamp query (the first such batch wins ties, as in
// Kafka).
//
// REQUIRES: p.mu held for writing.
func (p *Partition) noteTimestampLocked(info BatchInfo) {
	switch {
	case p.maxTimestamp.Size == 0 || info.MaxTimestamp > p.maxTimestamp.MaxTimestamp:
		p.maxTimestamp, p.maxTimeLast = info, info.BaseOffset
	case info.MaxTimestamp == p.maxTimestamp.MaxTimestamp:
		p.maxTimeLast = info.BaseOffset
	}
}

// ReadResult is what Read returns: the batches read and the offsets at the
// time of the read.
type ReadResult struct {
	Records []byte // whole batches, concatenated as the fetch response carries them
	Offsets
}

// Read returns the batches from the one holding offset up to the limit
// that iso sets, at most maxBytes of them except that, with minOne, the
// first batch is returned whatever its size (Kafka's minOneMessage, so that
// a consumer always progresses). An offset before the log start or after
// the log end is ErrOffsetOutOfRange; the log end itself, or an offset
// between the limit and the log end, reads nothing. O(log batches + batches
// read).
func (p *Partition) Read(offset int64, iso Isolation, maxBytes int, minOne bool) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return ReadResult{}, p.errDeleted()
	}
	o := p.offsetsLocked()
	if offset < o.LogStart || offset > o.LogEnd {
		return ReadResult{Offsets: o}, fmt.Errorf("%w: offset %d of %s-%d, which holds %d to %d",
			ErrOffsetOutOfRange, offset, p.topic.Name, p.index, o.LogStart, o.LogEnd)
	}
	recs, err := p.log.Read(nil, offset, o.limit(iso), maxBytes, minOne)
	if err != nil {
		return ReadResult{Offsets: o}, fmt.Errorf("storage: read %s-%d: %w", p.topic.Name, p.index, err)
	}
	return ReadResult{Records: recs, Offsets: o}, nil
}

// Readable returns how many bytes a read from offset up to the limit iso
// sets would return, counting no further than upTo: what a waiting fetch
// has accumulated (Kafka's DelayedFetch counts the same way). Its errors are
// Read's. O(log batches + batches counted).
func (p *Partition) Readable(offset int64, iso Isolation, upTo int) (int, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, p.errDeleted()
	}
	o := p.offsetsLocked()
	if offset < o.LogStart || offset > o.LogEnd {
		return 0, fmt.Errorf("%w: offset %d of %s-%d", ErrOffsetOutOfRange, offset, p.topic.Name, p.index)
	}
	n, limit := 0, o.limit(iso)
	err := p.log.Scan(offset, func(b BatchInfo) bool {
		if b.LastOffset >= limit {
			return false
		}
		n += b.Size
		return n < upTo
	})
	return n, err
}

// Timestamp finds, below the limit iso sets, the first batch whose max
// timestamp is at least ts, and returns its base offset and max timestamp
// (ListOffsets by timestamp). The granularity is the batch: records inside
// are not decoded, so the offset may be a few records early, never late.
// found is false when no batch qualifies. O(batches).
func (p *Partition) Timestamp(ts int64, iso Isolation) (offset, timestamp int64, found bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, 0, false, p.errDeleted()
	}
	limit := p.offsetsLocked().limit(iso)
	err = p.log.Scan(p.log.Bounds().Start, func(b BatchInfo) bool {
		if b.LastOffset >= limit {
			return false
		}
		if b.MaxTimestamp >= ts {
			offset, timestamp, found = b.BaseOffset, b.MaxTimestamp, true
			return false
		}
		return true
	})
	return offset, timestamp, found, err
}

// MaxTimestamp returns the largest max timestamp of the batches below the
// limit iso sets, and the offset of the batch's last record (ListOffsets'
// -3; Kafka before 3.8 gave this offset for compressed batches too). found
// is false for an empty log. O(1) unless the batch is beyond the limit.
func (p *Partition) MaxTimestamp(iso Isolation) (offset, timestamp int64, found bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, 0, false, p.errDeleted()
	}
	limit := p.offsetsLocked().limit(iso)
	if m := p.maxTimestamp; m.Size > 0 && m.LastOffset < limit {
		return m.LastOffset, m.MaxTimestamp, true, nil
	}
	var best BatchInfo
	err = p.log.Scan(p.log.Bounds().Start, func(b BatchInfo) bool {
		if b.LastOffset >= limit {
			return false
		}
		if best.Size == 0 || b.MaxTimestamp > best.MaxTimestamp {
			best = b
		}
		return true
	})
	return best.LastOffset, best.MaxTimestamp, best.Size > 0, err
}

// close marks the partition deleted, so that every later call fails with
// ErrDeleted, and closes its log; with remove it deletes the log's batches
// for good (its topic was deleted), else a durable log keeps them for the
// next open (the store is closing).
func (p *Partition) close(remove bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return nil
	}
	p.deleted = true
	p.producers = producers{}
	if remove {
		return p.log.Remove()
	}
	return p.log.Close()
}
