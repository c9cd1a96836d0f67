package storage

import (
	"fmt"
	"slices"
)

// This file holds a partition's leader-epoch cache (Kafka's
// LeaderEpochFileCache, KIP-101): for each leader epoch that wrote
// batches to the log, the offset of its first batch. A follower asks its
// leader where the follower's latest epoch ends in the leader's log
// (OffsetForLeaderEpoch) and truncates what it holds past that: records
// an old leader wrote that its successor never had. A consumer asks the
// same question to find out whether the records it read were truncated
// (KIP-320).

// UndefinedEpoch and UndefinedEpochOffset are EndOffsetFor's answer when
// the cache cannot place an epoch (Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// An EpochEntry is one leader epoch and the offset its first batch got.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// leaderEpochs is the cache's entries, by epoch and start offset, both
// strictly increasing. It is a plain value: Partition guards it with its
// lock and persists it.
type leaderEpochs []EpochEntry

// latest returns the latest entry, ok false when there is none.
func (c leaderEpochs) latest() (EpochEntry, bool) {
	if len(c) == 0 {
		return EpochEntry{}, false
	}
	return c[len(c)-1], true
}

// assign records that epoch starts at offset, if epoch is larger than the
// latest epoch (or the cache is empty): the first batch of a new leader's
// epoch was appended there, or a broker became leader at epoch with its
// log ending there (Kafka's makeLeader). Entries starting at or after
// offset, which a consistent log cannot hold, are dropped first. A
// negative epoch (a batch written before epochs, or by no leader) and an
// epoch not larger than the latest change nothing. It reports whether the
// cache changed. O(1) amortised.
func (c *leaderEpochs) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return false
	}
	c.truncateFromEnd(offset)
	*c = append(*c, EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch for epoch on a log ending at
// logEnd, as Kafka's endOffsetFor: the largest epoch at or below epoch
// that the cache knows, and where it ends: the start offset of the next
// larger epoch, or logEnd when epoch is the latest. An epoch below the
// first entry answers epoch itself and the first entry's start (its
// batches are gone; the follower replicates from there). An undefined
// epoch (-1), an empty cache, or an epoch above every entry but the
// latest's is (UndefinedEpoch, UndefinedEpochOffset). O(log entries).
func (c leaderEpochs) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	last, ok := c.latest()
	switch {
	case epoch == UndefinedEpoch || !ok:
		return UndefinedEpoch, UndefinedEpochOffset
	case epoch == last.Epoch:
		// The epoch being written to: it ends at the log end.
		return epoch, logEnd
	case epoch > last.Epoch:
		// Kafka's "should never be hit": a leader's latest epoch is
		// its current one.
		return UndefinedEpoch, UndefinedEpochOffset
	}
	// The first entry with a larger epoch: it exists, as last is one.
	higher, _ := slices.BinarySearchFunc(c, epoch, func(e EpochEntry, ep int32) int {
		if e.Epoch <= ep {
			return -1
		}
		return 1
	})
	if higher == 0 {
		return epoch, c[0].StartOffset
	}
	return c[higher-1].Epoch, c[higher].StartOffset
}

// truncateFromEnd drops the entries starting at or after end: the log was
// cut back to end (Kafka's truncateFromEnd). It reports whether the cache
// changed. O(entries dropped).
func (c *leaderEpochs) truncateFromEnd(end int64) bool {
	n := len(*c)
	for n > 0 && (*c)[n-1].StartOffset >= end {
		n--
	}
	changed := n < len(*c)
	*c = (*c)[:n]
	return changed
}

// truncateFromStart drops the entries that start at or before start, the
// log's new start, but the latest of them, which now starts at start: its
// epoch still covers the first batches kept (Kafka's truncateFromStart).
// It reports whether the cache changed. O(entries).
func (c *leaderEpochs) truncateFromStart(start int64) bool {
	i := 0
	for i < len(*c) && (*c)[i].StartOffset <= start {
		i++
	}
	if i == 0 || (i == 1 && (*c)[0].StartOffset == start) {
		return false
	}
	kept := (*c)[i-1]
	kept.StartOffset = start
	*c = append(leaderEpochs{kept}, (*c)[i:]...)
	return true
}

// An EpochCheckpointer is a Log that keeps its partition's leader-epoch
// cache across restarts (logdir's Log, in Kafka's leader-epoch-checkpoint
// file). Partition calls it under its write lock, as the Log's other
// writes: ReadLeaderEpochs once when it opens the log, WriteLeaderEpochs
// whenever the cache changes, which replaces what is kept atomically.
type EpochCheckpointer interface {
	// ReadLeaderEpochs returns the entries kept, found false when none
	// ever were (a log made before epochs were kept).
	ReadLeaderEpochs() (entries []EpochEntry, found bool, err error)
	// WriteLeaderEpochs replaces the entries kept with entries.
	WriteLeaderEpochs(entries []EpochEntry) error
}

// validEpochs checks entries as a checkpoint may hold them: epochs and
// start offsets strictly increasing, none negative.
func validEpochs(entries []EpochEntry) error {
	for i, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("entry %d: epoch %d at offset %d", i, e.Epoch, e.StartOffset)
		}
		if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			return fmt.Errorf("entry %d (epoch %d at %d) does not follow entry %d (epoch %d at %d)",
				i, e.Epoch, e.StartOffset, i-1, entries[i-1].Epoch, entries[i-1].StartOffset)
		}
	}
	return nil
}

// AssignLeaderEpoch records that this replica leads from its log end at
// epoch, before any batch of epoch is appended (Kafka's makeLeader): a
// follower whose log diverged at the previous epoch then learns from
// OffsetForLeaderEpoch that the previous epoch ends here, even while the
// new leader has taken no record. An epoch not larger than the latest
// changes nothing. It fails with ErrDeleted; a checkpoint that cannot be
// written is logged, as after an append. O(1) plus the checkpoint.
func (p *Partition) AssignLeaderEpoch(epoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return p.errDeleted()
	}
	if p.epochs.assign(epoch, p.log.Bounds().End) {
		p.epochsChangedLocked()
	}
	return nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for epoch: the largest
// epoch at or below it that this log holds, and the offset where that
// epoch ends here (see leaderEpochs.endOffsetFor), or UndefinedEpoch and
// UndefinedEpochOffset. It fails with ErrDeleted. O(log epochs).
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, 0, p.errDeleted()
	}
	e, end := p.epochs.endOffsetFor(epoch, p.log.Bounds().End)
	return e, end, nil
}

// LatestLeaderEpoch returns the latest epoch in the leader-epoch cache,
// ok false when it is empty (an empty log, or one of batches written
// before epochs). O(1).
func (p *Partition) LatestLeaderEpoch() (epoch int32, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.epochs.latest()
	return e.Epoch, ok
}

// LeaderEpochs returns a copy of the leader-epoch cache, oldest first,
// for tests and tools. O(epochs).
func (p *Partition) LeaderEpochs() []EpochEntry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.epochs)
}
