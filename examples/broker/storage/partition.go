package storage

import (
	"fmt"
	"math"
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
	// ReadCommitted reads up to the last stable offset (READ_COMMITTED):
	// below the first transaction still undecided, or whose marker is not
	// yet below the high watermark. Its reads also return the aborted
	// transactions they overlap (ReadResult.Aborted).
	ReadCommitted
	// ReadReplica reads up to the log end offset, as a follower does.
	ReadReplica
)

// Offsets are a partition's offsets, Kafka's names for them.
type Offsets struct {
	LogStart      int64 // the first offset kept
	HighWatermark int64 // every in-sync replica has the offsets below it
	LastStable    int64 // below it every transaction is decided, and replicated (see txns.go)
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
	txns          txns         // the transactions in offset order, the aborted index (txns.go)
	maxTimestamp  BatchInfo    // the kept batch with the largest max timestamp; Size 0 when none
	maxTimeLast   int64        // the base offset of the last kept batch with that max timestamp
	epochs        leaderEpochs // the leader-epoch cache (epochs.go)
	// logStart is the logical log start (logstart.go): DeleteRecords may
	// set it inside a batch, which the log keeps; the log start is the
	// larger of it and the log's first offset (startLocked).
	logStart int64
	// keptStart is the log start the log's checkpoint holds, 0 when
	// none (logstart.go).
	keptStart int64
	deleted   bool
	// cleanedTo is where the log cleaner's last pass ended: the
	// offsets below it are clean, those from it dirty (cleaner.go).
	cleanedTo int64
	// cuts counts the truncations and resets, so that a cleaning pass
	// that one overtook swaps nothing in.
	cuts uint64
	// roll is the segment.bytes and segment.ms its log was last told
	// (compactconfig.go).
	roll segmentRoll
}

// openPartition opens partition index of t on log. A log that is not empty
// (a durable one, reopened) is taken as fully acknowledged (its high
// watermark is its end), and its batches rebuild the producers' state, the
// transactions and the aborted index, and the max timestamp, as Kafka
// rebuilds its producer state from the log on recovery.
func openPartition(t *Topic, index int32, cfg *config, log Log) (*Partition, error) {
	// A partition with followers has its high watermark moved by its
	// replica manager from the start, so that no append slips past it.
	p := &Partition{topic: t, index: index, cfg: cfg, log: log, hwManaged: t.ReplicationFactor > 1}
	p.highWatermark = log.Bounds().End
	scanned, err := p.rebuildLocked()
	if err != nil {
		return nil, fmt.Errorf("storage: recover %s-%d: %w", t.Name, index, err)
	}
	if err := p.recoverLogStartLocked(); err != nil {
		return nil, fmt.Errorf("storage: recover the log start of %s-%d: %w", t.Name, index, err)
	}
	p.readCleanedLocked()
	// The batches before the log start are kept only when it is inside
	// their segment: the cache starts at the log start, as the cache
	// DeleteRecords left does.
	scanned.truncateFromStart(p.startLocked())
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

// rebuildLocked rebuilds the producers' state, the transactions (open
// ones, the aborted index) and the max-timestamp batch from the log's
// batches, forgetting what they were: on opening a log, and after a
// truncation removed batches they may name. A producer whose batches are
// all gone is forgotten, as after a restart; a transaction whose marker is
// gone is open again. Kafka keeps its aborted index in .txnindex files;
// every batch is read here anyway, so the index is rebuilt from the
// markers. It returns the leader-epoch cache the batches make, which
// opening a log checks its checkpoint against. O(batches).
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) rebuildLocked() (leaderEpochs, error) {
	p.producers = newProducers(p.cfg.producerBatches)
	p.txns = txns{}
	p.maxTimestamp = BatchInfo{}
	var epochs leaderEpochs
	err := p.log.Scan(p.log.Bounds().Start, func(info BatchInfo) bool {
		p.applyLocked(info, time.UnixMilli(info.AppendTime))
		epochs.assign(info.LeaderEpoch, info.BaseOffset)
		return true
	})
	return epochs, err
}

// applyLocked brings the partition's state in line with info, a batch
// just appended (by a leader or a follower alike) or read back from the
// log in a rebuild, at now: its producer's sequences, epoch and
// transaction, the transactions' order and the aborted index, the max
// timestamp. No check is made: the batch is in the log.
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) applyLocked(info BatchInfo, now time.Time) {
	switch {
	case !info.hasProducer():
	case info.marker():
		p.producers.voidGuard(info) // a check before it no longer holds
		if first, ok := p.producers.endTxn(info, now); ok {
			p.txns.complete(info.ProducerID, first, info.BaseOffset, info.Control == ControlAbort)
			p.txns.stabilize(p.highWatermark)
		}
	case info.Control == ControlNone:
		if p.producers.record(info, now) {
			p.txns.begin(info.BaseOffset)
		}
	}
	p.noteTimestampLocked(info)
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

// Size returns the bytes of the batches the partition's log holds, those
// before a log start DeleteRecords moved into a segment included (they
// go with their segment), as Kafka's log size counts them.
func (p *Partition) Size() (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, p.errDeleted()
	}
	return p.log.Bounds().Size, nil
}

// REQUIRES: p.mu held.
func (p *Partition) offsetsLocked() Offsets {
	b := p.log.Bounds()
	start := max(p.logStart, b.Start)
	return Offsets{LogStart: start, HighWatermark: p.highWatermark, LastStable: p.lastStableLocked(start), LogEnd: b.End}
}

// lastStableLocked returns the last stable offset, start being the log
// start: the high watermark, or the first unstable offset if smaller (see
// txns.go), but not before the log start, as Kafka's
// maybeIncrementFirstUnstableOffset keeps it there once retention took an
// open transaction's first batches. O(1).
//
// REQUIRES: p.mu held.
func (p *Partition) lastStableLocked(start int64) int64 {
	if first, ok := p.txns.firstUnstable(); ok && first < p.highWatermark {
		return max(first, start)
	}
	return p.highWatermark
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
// records.go), checks its producer's sequence, epoch and transaction, and
// appends it at the log end, its base offset and leader epoch written in.
// A transactional batch starts its producer's transaction here if none is
// open. Once appended, raw is
// the log's: written in place and kept (an in-memory log keeps it and its
// whole backing array), so the caller must not modify it, nor append it
// again; a caller whose raw is a small part of a large buffer passes a
// copy. It then moves the high watermark
// to the log end, unless the replica manager moves it
// (SetHighWatermarkManaged), and applies the size and time retention (a
// failure there is logged, not returned: the batch is in, and failing would
// make its producer send it again). It returns an error wrapping ErrBatchTooLarge, ErrCorruptBatch,
// ErrInvalidRecord, ErrInvalidProducerEpoch, ErrOutOfOrderSequence,
// ErrInvalidTxnState or ErrDeleted, or the Log's error. The checksum is
// computed, and the records walked, before the lock is taken.
func (p *Partition) Append(raw []byte) (AppendResult, error) { return p.appendFrom(raw, fromClient, 0) }

// AppendCoordinator is Append for a batch the broker's own coordinators
// write (Kafka's AppendOrigin.COORDINATOR): the group coordinator writes a
// consumer's transactional offset commits (TxnOffsetCommit) into
// __consumer_offsets as a transactional batch with the client's producer
// id and epoch and base sequence -1. A producer id without sequences is
// allowed, and no sequence is checked nor any duplicate recognised, but
// the producer's epoch still fences (ErrInvalidProducerEpoch), a batch
// that is not transactional while its transaction is open is refused
// (ErrInvalidTxnState), and a transactional one starts or continues its
// transaction, as Append's. A batch without a producer id is appended as
// Append appends it. Control batches are refused (ErrInvalidRecord):
// markers are AppendMarker's. Its other errors, and what becomes of raw,
// are Append's.
func (p *Partition) AppendCoordinator(raw []byte) (AppendResult, error) {
	return p.appendFrom(raw, fromCoordinator, 0)
}

// appendFrom is Append, AppendCoordinator and AppendVerified, for a batch
// from, verified under guard (0: none asked).
func (p *Partition) appendFrom(raw []byte, from origin, guard uint64) (AppendResult, error) {
	// The size first, as Kafka: a batch too large is refused without
	// checksumming it.
	// max.message.bytes read once: a change meanwhile (AlterTopicConfig)
	// applies to the next batch, whole.
	cfg := p.topic.Config()
	maxBytes := cfg.MaxMessageBytes
	if len(raw) > int(maxBytes) {
		return AppendResult{}, fmt.Errorf("%w: %d bytes, max.message.bytes is %d", ErrBatchTooLarge, len(raw), maxBytes)
	}
	b, err := parseBatch(raw, from)
	if err != nil {
		return AppendResult{}, err
	}
	if err := p.cfg.validateBatch(b, int(maxBytes)); err != nil {
		return AppendResult{}, err
	}
	if cfg.Cleanup.Compacts() {
		if err := requireKeys(b); err != nil {
			return AppendResult{}, err
		}
	}
	now := p.cfg.clock.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return AppendResult{}, p.errDeleted()
	}
	if b.info.hasProducer() {
		var dup BatchInfo
		var isDup bool
		if from == fromClient {
			dup, isDup, err = p.producers.check(b.info)
		} else {
			err = p.producers.checkCoordinator(b.info)
		}
		if err == nil && guard != 0 {
			err = p.producers.checkGuard(b.info, guard)
		}
		if err != nil {
			return AppendResult{}, fmt.Errorf("%s-%d: %w", p.topic.Name, p.index, err)
		}
		if isDup {
			// Kafka answers a retried batch with success and the offset
			// it was first written at, so the producer moves on.
			return AppendResult{BaseOffset: dup.BaseOffset, LastOffset: dup.LastOffset,
				LogStartOffset: p.startLocked(), Duplicate: true}, nil
		}
	}
	return p.appendLocked(b, now)
}

// appendLocked appends b, checked, at the log end, at now, as a leader
// does: its offsets and leader epoch written in, the partition's state
// brought in line (applyLocked), the leader-epoch cache, the high
// watermark unless managed, and retention.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) appendLocked(b *Batch, now time.Time) (AppendResult, error) {
	p.setRollLocked()
	placed := b.place(p.log.Bounds().End, p.leaderEpoch.Load(), now)
	if err := p.log.Append(placed); err != nil {
		return AppendResult{}, fmt.Errorf("storage: append to %s-%d: %w", p.topic.Name, p.index, err)
	}
	p.applyLocked(placed.info, now)
	if p.epochs.assign(placed.info.LeaderEpoch, placed.info.BaseOffset) {
		p.epochsChangedLocked()
	}
	if !p.hwManaged {
		p.advanceHighWatermarkLocked()
	}
	if err := p.retainLocked(now); err != nil {
		// The batch is appended: failing the append now would make
		// its producer send it again. The periodic sweep retries.
		p.cfg.log.Warn("retention after an append", zap.Error(err))
	}
	return AppendResult{BaseOffset: placed.info.BaseOffset, LastOffset: placed.info.LastOffset,
		LogStartOffset: p.startLocked()}, nil
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
		p.setHighWatermarkLocked(end)
	}
}

// setHighWatermarkLocked sets the high watermark to hw, and makes stable
// the transactions whose marker it passed: every move of the high
// watermark goes through here, so that the last stable offset follows.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) setHighWatermarkLocked(hw int64) {
	p.highWatermark = hw
	p.txns.stabilize(hw)
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
	// Aborted are, for a ReadCommitted read that returned batches, the
	// aborted transactions that overlap them, by marker offset: what a
	// Fetch response's aborted_transactions carries, for the consumer
	// to drop their records. Nil for other reads, and when none.
	Aborted []AbortedTxn
}

// Read returns the batches from the one holding offset up to the limit
// that iso sets, at most maxBytes of them except that, with minOne, the
// first batch is returned whatever its size (Kafka's minOneMessage, so that
// a consumer always progresses). A ReadCommitted read also returns the
// aborted transactions that overlap the batches read (Kafka's
// collectAbortedTransactions: those whose marker is at or after offset and
// that start before the offset after the last batch read). An offset
// before the log start or after the log end is ErrOffsetOutOfRange; the
// log end itself, or an offset between the limit and the log end, reads
// nothing. O(log batches + batches read + log aborted + aborted returned).
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
	res := ReadResult{Records: recs, Offsets: o}
	if iso == ReadCommitted && len(recs) > 0 {
		res.Aborted = p.txns.abortedIn(offset, lastOffsetIn(recs)+1)
	}
	return res, nil
}

// ReadBatches returns the whole batches from the one holding first through
// the one holding last, below the limit iso sets: what a share fetch hands
// out for the records it acquired, no batch beyond them (Kafka slices a
// share fetch's records to its acquired batches). A ReadCommitted read
// also returns the aborted transactions they overlap, as Read does, for
// a share group reading committed to archive their records. Its errors
// are Read's. O(log batches + batches read + log aborted + aborted
// returned).
func (p *Partition) ReadBatches(first, last int64, iso Isolation) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return ReadResult{}, p.errDeleted()
	}
	o := p.offsetsLocked()
	if first < o.LogStart || first > o.LogEnd {
		return ReadResult{Offsets: o}, fmt.Errorf("%w: offset %d of %s-%d, which holds %d to %d",
			ErrOffsetOutOfRange, first, p.topic.Name, p.index, o.LogStart, o.LogEnd)
	}
	limit := o.limit(iso)
	if end, ok := p.batchEndLocked(last); ok && end+1 < limit {
		limit = end + 1
	}
	recs, err := p.log.Read(nil, first, limit, math.MaxInt, true)
	if err != nil {
		return ReadResult{Offsets: o}, fmt.Errorf("storage: read %s-%d: %w", p.topic.Name, p.index, err)
	}
	res := ReadResult{Records: recs, Offsets: o}
	if iso == ReadCommitted && len(recs) > 0 {
		res.Aborted = p.txns.abortedIn(first, lastOffsetIn(recs)+1)
	}
	return res, nil
}

// BatchEnd returns the last offset of the batch holding offset, false when
// the log holds no batch there (before its start, at or past its end).
// O(log batches).
func (p *Partition) BatchEnd(offset int64) (int64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, false
	}
	return p.batchEndLocked(offset)
}

// batchEndLocked is BatchEnd. REQUIRES: p.mu held.
func (p *Partition) batchEndLocked(offset int64) (int64, bool) {
	o := p.offsetsLocked()
	if offset < o.LogStart || offset >= o.LogEnd {
		return 0, false
	}
	end, found := int64(0), false
	_ = p.log.Scan(offset, func(b BatchInfo) bool {
		end, found = b.LastOffset, b.LastOffset >= offset
		return false
	})
	return end, found
}

// lastOffsetIn returns the last offset of the last of recs, whole batches
// a log read: their lengths are walked, O(batches).
func lastOffsetIn(recs []byte) int64 {
	var last int64
	for pos := 0; len(recs)-pos >= batchOverhead; {
		h, err := ReadBatchHeader(recs[pos : pos+batchOverhead])
		if err != nil {
			break // the log's own batches: it cannot be
		}
		last = h.LastOffset
		pos += h.Size
	}
	return last
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
// are not decoded, so the offset may be a few records early, never late,
// and never before the log start. found is false when no batch qualifies.
// O(batches).
func (p *Partition) Timestamp(ts int64, iso Isolation) (offset, timestamp int64, found bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, 0, false, p.errDeleted()
	}
	o := p.offsetsLocked()
	limit := o.limit(iso)
	err = p.log.Scan(o.LogStart, func(b BatchInfo) bool {
		if b.LastOffset >= limit {
			return false
		}
		if b.MaxTimestamp >= ts {
			// A batch the log start falls inside is found at the log
			// start, as Kafka's fetchOffsetByTimestamp answers.
			offset, timestamp, found = max(b.BaseOffset, o.LogStart), b.MaxTimestamp, true
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
	p.txns = txns{}
	if remove {
		return p.log.Remove()
	}
	return p.log.Close()
}
