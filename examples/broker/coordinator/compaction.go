package coordinator

// Compaction of a state topic.
//
// Every commit appends records to its group's partition of
// __consumer_offsets (kgo commits every partition it consumes every 5s),
// so a partition that kept them all would grow without bound, in memory
// or in log.dirs. Kafka compacts the topic by key (cleanup.policy=compact);
// this runtime does what the offsets file of the single-broker coordinator
// did, on the replicated log, for each partition of a state topic it
// leads:
//
//  1. It follows the partition's records as it appends them (a State, which
//     the load that made it leader began): the live ones, each key's
//     latest value, and the dead ones, overwritten or deleted.
//  2. Once the dead reach TopicSpec.CompactionDeadRecords and outnumber
//     the live, it appends the live records again, after the append that
//     tipped it and before any other (a rewrite). The rewrite is taken
//     from the log, not from the shard's state: it holds appends still
//     pending, and every record of it agrees with all that came before it
//     in the log, so whichever prefix of the log survives a change of
//     leader replays to the keys its records say.
//  3. Once the high watermark passes the rewrite (a delayedLogStart in the
//     Produce purgatory, or the next append that finds it so), the
//     partition's log start moves to the rewrite's first offset
//     (storage's AdvanceLogStart, as retention drops segments). A replay
//     from the log start then rebuilds the same groups from the live
//     records alone.
//
// No rewrite starts while a transaction is open in the partition (its
// FirstUndecidedOffset): the group coordinator writes a transaction's
// offset commits (TxnOffsetCommit) with its producer's id, and until the
// transaction's marker decides them they are neither live nor dead; a
// rewrite would copy them out of their transaction, and moving the log
// start past them would drop records whose transaction is still to be
// decided. The next append after the marker rewrites. Kafka's log cleaner
// likewise stops at the first unstable offset. Replication does not hold
// compaction back: a test of the last stable offset against the log end
// would, since on a replicated partition the high watermark is below the
// log end after every append; a decided transaction is just records.
//
// Every append of the runtime's, a shard's change or a rewrite's batch,
// goes through storage's AppendCoordinator (Kafka's
// AppendOrigin.COORDINATOR): a transactional batch with a producer id and
// no sequences is allowed, its producer's epoch checked.
//
// A rewrite costs the live records and is paid for by as many dead ones,
// so a commit costs O(1) amortised, and a partition holds at most about
// twice max(threshold, live) records. Followers take the leader's log
// start from their fetch responses (never past their own high watermark),
// as Kafka's do, so their copies are bounded too, and one that becomes
// leader replays only from there. In log.dirs the log start moves by whole
// segment files, so the bytes kept are bounded by a segment
// (log.segment.bytes) more.
//
// Lock order: Topic.mu, then the shard's locks (a group's mutex), then a
// compaction's mu, then the partition's own lock. The compaction's mu
// serializes the shard's appends to its partition, so that its State
// follows the log exactly.

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// rewriteBatchRecords bounds the records of one batch of a rewrite.
const rewriteBatchRecords = 1000

// compactor holds the compaction of each partition of a topic led here:
// one per partition index, kept for the broker's life (at most the
// topic's partitions).
type compactor struct {
	mu    sync.Mutex // guards parts (the map, not its values); taken last
	parts map[int32]*compaction
}

// compaction is one partition's.
type compaction struct {
	mu sync.Mutex // guards the following
	// p and epoch are the partition and the leader epoch state follows
	// its log at; ok is false until it is built, and after it failed.
	p     *storage.Partition
	epoch int32
	ok    bool
	// state is the partition's records from its log start (when it was
	// built) to next; dropped of them are before the log start now.
	state   State
	next    int64
	dropped int64
	rewrite *rewrite // appended, the log start not yet moved to it
}

// rewrite is a rewrite's place in the log: [start, end), with before of
// the records counted ahead of it.
type rewrite struct {
	start, end int64
	before     int64
}

func newCompactor() *compactor { return &compactor{parts: make(map[int32]*compaction)} }

// of returns partition idx's compaction, created empty if need be.
func (oc *compactor) of(idx int32) *compaction {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	c := oc.parts[idx]
	if c == nil {
		c = &compaction{}
		oc.parts[idx] = c
	}
	return c
}

// loaded starts p's compaction at epoch from state, the replay of its log
// up to next, which the load that made this broker its leader made.
func (oc *compactor) loaded(p *storage.Partition, epoch int32, state State, next int64) {
	c := oc.of(p.Index())
	c.mu.Lock()
	defer c.mu.Unlock()
	o, err := p.Offsets()
	if err != nil {
		return
	}
	c.p, c.epoch, c.ok, c.next, c.dropped, c.rewrite = p, epoch, true, next, 0, nil
	c.state = state
	if next != o.LogEnd {
		// Appended meanwhile: the next append rebuilds it.
		c.ok = false
	}
}

// forget resets partition idx's compaction: it is no longer led here. The
// compaction itself stays, so that an append still under way from before
// and those of a later leadership serialize on the same mutex; the next
// append rebuilds its state from the log.
func (oc *compactor) forget(idx int32) {
	c := oc.of(idx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p, c.ok, c.rewrite = nil, false, nil
	c.state = nil
}

// append appends batch to p, led here at epoch, follows it, and rewrites
// the live records after it when the dead ones call for it. It returns
// the append's result and, for a rewrite, the wait for its replication
// (to be submitted by the caller with no compaction lock held).
//
// REQUIRES: no compaction's mu held (a group's mutex may be).
func (t *Topic) compactedAppend(p *storage.Partition, epoch int32, batch []byte) (storage.AppendResult, *delayedLogStart, error) {
	c := t.compactor.of(p.Index())
	c.mu.Lock()
	defer c.mu.Unlock()
	res, err := p.AppendCoordinator(batch)
	if err != nil {
		return res, nil, err
	}
	c.followLocked(t, p, epoch, res, batch)
	return res, c.maybeRewriteLocked(t), nil
}

// followLocked applies batch, appended to p at res, to the state, or
// rebuilds the state from p's log when it does not follow it (another
// leader epoch, another partition, an append it did not see).
//
// REQUIRES: c.mu held.
func (c *compaction) followLocked(t *Topic, p *storage.Partition, epoch int32, res storage.AppendResult, batch []byte) {
	if c.ok && c.p == p && c.epoch == epoch && c.next == res.BaseOffset {
		if _, err := c.state.Apply(batch); err != nil {
			// It cannot fail: the shard wrote it.
			t.rt.log.Error("following a state partition", zap.String("topic", t.spec.Name), zap.Int32("partition", p.Index()),
				zap.Error(err))
			c.ok = false
			return
		}
		c.next = res.LastOffset + 1
		return
	}
	c.p, c.epoch, c.ok, c.dropped, c.rewrite = p, epoch, false, 0, nil
	state, next, err := t.replay(p)
	if err != nil {
		t.rt.log.Warn("state partition not compacted: its records do not replay", zap.String("topic", t.spec.Name),
			zap.Int32("partition", p.Index()), zap.Error(err))
		return
	}
	c.state, c.next, c.ok = state, next, true
}

// maybeRewriteLocked moves the log start to a rewrite the high watermark
// has passed, or appends a rewrite when the dead records reach the
// threshold and outnumber the live ones and no transaction is open in the
// partition (see the top of the file); it returns the wait for a new
// rewrite's replication, or nil.
//
// REQUIRES: c.mu held.
func (c *compaction) maybeRewriteLocked(t *Topic) *delayedLogStart {
	if !c.ok {
		return nil
	}
	if c.rewrite != nil {
		c.dropLocked(t)
		return nil
	}
	live := c.state.Live()
	dead := c.state.Records() - c.dropped - live
	if dead < max(t.spec.CompactionDeadRecords, live) {
		return nil
	}
	p := c.p
	if _, open := p.FirstUndecidedOffset(); open {
		return nil
	}
	rw := &rewrite{start: c.next, before: c.state.Records()}
	maxBytes := int(p.Topic().Config().MaxMessageBytes) / 2
	for _, b := range c.state.Rewrite(time.Now(), rewriteBatchRecords, maxBytes) {
		res, err := p.AppendCoordinator(b)
		if err != nil {
			// What was appended of it is harmless (each record is its
			// key's latest value) and is followed; the next append
			// tries again.
			t.rt.log.Warn("rewriting a state partition's live records", zap.String("topic", t.spec.Name),
				zap.Int32("partition", p.Index()), zap.Error(err))
			return nil
		}
		if _, err := c.state.Apply(b); err != nil {
			t.rt.log.Error("following a state partition's rewrite", zap.String("topic", t.spec.Name),
				zap.Int32("partition", p.Index()), zap.Error(err))
			c.ok = false
			return nil
		}
		c.next = res.LastOffset + 1
	}
	rw.end = c.next
	c.rewrite = rw
	t.rt.log.Debug("rewrote a state partition's live records", zap.String("topic", t.spec.Name), zap.Int32("partition", p.Index()),
		zap.Int64("live", live), zap.Int64("dead", dead), zap.Int64("from", rw.start), zap.Int64("to", rw.end))
	return &delayedLogStart{t: t, p: p, epoch: c.epoch, end: rw.end}
}

// dropLocked moves the log start to the pending rewrite once the high
// watermark has passed it.
//
// REQUIRES: c.mu held; c.rewrite not nil.
func (c *compaction) dropLocked(t *Topic) {
	o, err := c.p.Offsets()
	if err != nil || o.HighWatermark < c.rewrite.end {
		return
	}
	start, err := c.p.AdvanceLogStart(c.rewrite.start)
	if err != nil {
		t.rt.log.Warn("dropping a state partition's compacted records", zap.String("topic", t.spec.Name),
			zap.Int32("partition", c.p.Index()), zap.Error(err))
		return
	}
	t.rt.log.Debug("dropped a state partition's compacted records", zap.String("topic", t.spec.Name), zap.Int32("partition", c.p.Index()),
		zap.Int64("log_start_offset", start), zap.Int64("records", c.rewrite.before-c.dropped))
	c.dropped, c.rewrite = c.rewrite.before, nil
}

// drop moves p's log start to its pending rewrite, appended at epoch, if
// the high watermark has passed it.
func (t *Topic) drop(p *storage.Partition, epoch int32) {
	c := t.compactor.of(p.Index())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.p == p && c.epoch == epoch && c.rewrite != nil {
		c.dropLocked(t)
	}
}

// delayedLogStart is a rewrite waiting, in the Produce purgatory, for the
// high watermark of its partition to pass it, so that the records before
// it can go. Past TopicSpec.AppendTimeout it gives up: the next append to
// the partition tries again.
type delayedLogStart struct {
	operation.State
	t     *Topic
	p     *storage.Partition
	epoch int32 // the leader epoch the rewrite was appended under
	end   int64 // the offset after the rewrite
}

// submit waits for the rewrite's replication; a leader alone in its ISR
// has it at once.
func (d *delayedLogStart) submit() {
	rm := d.t.rt.rm
	rm.AfterAppend(d.p)
	if err := rm.WatchHighWatermark(d, d.t.spec.AppendTimeout, d.p); err != nil {
		d.t.rt.log.Debug("rewrite of a state partition not watched", zap.Error(err)) // closing
	}
}

func (d *delayedLogStart) TryComplete() bool {
	o, err := d.p.Offsets()
	return err != nil || o.HighWatermark >= d.end || !d.t.rt.rm.LeadsAt(d.p, d.epoch)
}

func (d *delayedLogStart) OnComplete() {
	if d.t.rt.rm.LeadsAt(d.p, d.epoch) {
		d.t.drop(d.p, d.epoch)
	}
}

func (d *delayedLogStart) OnExpiration() {}
