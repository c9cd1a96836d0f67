package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Log compaction: a partition's cleaning pass (Kafka's Cleaner).
//
// A topic whose cleanup.policy has compact keeps each key's latest value.
// Its partitions' logs are cleaned in passes, each a partition's own
// (every replica cleans its own log, as Kafka's do: a follower's copy of
// a cleaned leader's log is cleaned the same way, by the same rules, from
// the same records):
//
//  1. The cleanable section: the sealed segments (never the last one, the
//     active segment) that end at or below the last stable offset, which
//     is never above the high watermark, so that nothing undecided or not
//     yet replicated is cleaned; and of them only those before the first
//     whose newest record is younger than min.compaction.lag.ms (KIP-354).
//     Its dirty part starts at the partition's first dirty offset, where
//     the last pass ended (Kafka's cleaner checkpoint, which a durable
//     log keeps: CleanerCheckpointer; in memory, a restart starts empty).
//  2. The offset map (Kafka's OffsetMap): each key of a record in the
//     dirty part, to its latest offset there. A map past
//     WithCleanerMapKeys keys stops at the segment that filled it; the
//     segments after it wait for the next pass.
//  3. Each segment from the log start to the end of the mapped part is
//     read and rewritten (cleanbatch.go): a record is kept if its key's
//     latest offset is its own, or its key is not mapped (its latest
//     value is in a segment the map did not reach); a record without a
//     key goes (a topic turned compacted may hold some); a tombstone
//     that is its key's latest stays until its batch's delete horizon,
//     set when first cleaned. Batches keep their base offsets: a fetch
//     after cleaning returns the records kept at their own offsets, with
//     gaps. A batch that loses every record goes, unless it is a
//     producer's last (a restart rebuilds its sequence from it) or, in a
//     log that keeps its segments' extents (SegmentExtentKeeper), its
//     segment's last: those stay, empty. The segment is swapped in by
//     Log.Replace; one whose batches all stay is not written.
//
// Transactions: the section never passes the last stable offset, so every
// transactional batch in it is decided, and the partition's aborted index
// says which were aborted. An aborted batch's records go, and enter no map
// (an aborted value never shadows a committed one); a committed batch's
// records are as any other's. A marker goes once no batch of its
// transaction is left and its delete horizon passed (markers.go), as
// Kafka's cleaner removes it.
//
// # Locks
//
// A pass takes the partition's lock only to read (a megabyte at a time,
// for reading) and to swap a segment in, so that appends and fetches go
// on between; the offset map and the rewrites are built with no lock
// held. A truncation or a reset meanwhile (cuts) ends the pass without
// a swap; retention taking a segment meanwhile fails its Replace
// (ErrSegmentChanged) and ends it too. A durable log writes the new
// segment before the lock is taken (StagedReplacer), and holds it for the
// renames. Passes of one partition are serialized by its store's cleaner
// (cleaning.go).

// cleanReadChunk is how many bytes a pass reads under one hold of the
// partition's lock.
const cleanReadChunk = 1 << 20

// CleanStats is what a cleaning pass did.
type CleanStats struct {
	// BytesRead counts the bytes of the segments rewritten, read once
	// for the map (the dirty ones) and once to be rewritten: Kafka's
	// "MB/s of log cleaned" counts the segments cleaned, as BytesCleaned.
	BytesRead int64
	// BytesCleaned is the size of the segments cleaned, before; BytesKept
	// after.
	BytesCleaned, BytesKept int64
	// Segments counts the segments cleaned; RecordsRemoved the records
	// dropped.
	Segments       int
	RecordsRemoved int64
}

// cleanScope is what the first step of a pass decides, under the
// partition's read lock.
type cleanScope struct {
	cfg        TopicConfig
	segs       []Segment // the cleanable section, oldest first
	firstDirty int64
	cuts       uint64
	keep       keepEmpty
	// aborted are the aborted transactions that overlap the section,
	// from the partition's aborted index.
	aborted []AbortedTxn
	// txnSeen holds the producers of the transactions a pass has met a
	// batch of and not yet their marker, in offset order: a marker stays
	// while a batch of its transaction does (markers.go).
	txnSeen map[int64]bool
}

// abortedBatch reports whether d, a transactional batch, is in one of
// the aborted transactions: its producer's, between the transaction's
// first offset and its marker.
func (sc *cleanScope) abortedBatch(d *decodedBatch) bool {
	if !d.info.Transactional {
		return false
	}
	for _, a := range sc.aborted {
		if a.ProducerID == d.info.ProducerID && a.FirstOffset <= d.info.BaseOffset && d.info.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}

// keepEmpty says which batches stay, emptied, when all their records go.
type keepEmpty struct {
	// producers are the base offsets of the last batch of each producer
	// the partition remembers: a restart rebuilds its sequence from it.
	producers map[int64]bool
	// extents is set for a log whose segments keep their extents
	// (SegmentExtentKeeper): a segment's last batch stays.
	extents bool
}

// scopeLocked returns the cleanable section of the log at now (step 1
// above), empty when no part of it is dirty, and its dirty ratio's parts:
// the bytes of its dirty part, and of it all. dirtyAge is how long ago
// the first dirty segment's newest record was written (0 when none is
// dirty): max.compaction.lag.ms weighs it.
//
// REQUIRES: p.mu held.
func (p *Partition) scopeLocked(now time.Time) (sc cleanScope, dirty, total int64, dirtyAge time.Duration, err error) {
	sc.cfg = p.topic.Config()
	o := p.offsetsLocked()
	sc.firstDirty, sc.cuts = max(p.cleanedTo, o.LogStart), p.cuts
	lagLimit := now.Add(-sc.cfg.MinCompactionLag).UnixMilli()
	var all []Segment
	err = p.log.Segments(func(s Segment) bool { all = append(all, s); return true })
	if err != nil || len(all) < 2 {
		return sc, 0, 0, 0, err
	}
	firstDirtyTime := int64(-1)
	for _, s := range all[:len(all)-1] { // never the active segment
		if s.NextOffset > o.LastStable || s.MaxTime > lagLimit {
			break
		}
		sc.segs = append(sc.segs, s)
		total += s.Size
		if s.NextOffset > sc.firstDirty {
			dirty += s.Size
			if firstDirtyTime < 0 {
				firstDirtyTime = s.MaxTime
			}
		}
	}
	if dirty == 0 {
		return cleanScope{cfg: sc.cfg}, 0, total, 0, nil
	}
	dirtyAge = time.Duration(max(now.UnixMilli()-firstDirtyTime, 0)) * time.Millisecond
	sc.keep.producers = p.producers.lastBatches()
	sc.txnSeen = make(map[int64]bool)
	sc.aborted = p.txns.abortedIn(o.LogStart, sc.segs[len(sc.segs)-1].NextOffset) // a copy
	if k, ok := p.log.(SegmentExtentKeeper); ok {
		sc.keep.extents = k.KeepsSegmentExtents()
	}
	return sc, dirty, total, dirtyAge, nil
}

// lastBatches returns the base offsets of each producer's last batch.
func (ps *producers) lastBatches() map[int64]bool {
	last := make(map[int64]bool, len(ps.byID))
	for _, e := range ps.byID {
		if n := len(e.batches); n > 0 {
			last[e.batches[n-1].BaseOffset] = true
		}
	}
	return last
}

// errCleanOvertaken ends a pass that a truncation overtook, or that the
// store's closing stopped: not a failure, the next pass starts afresh.
var errCleanOvertaken = errors.New("storage: a truncation overtook the cleaning")

// readSegment returns the bytes of the batches of s, read a chunk at a
// time under the partition's read lock; errCleanOvertaken if a
// truncation happened since cuts.
func (p *Partition) readSegment(s Segment, cuts uint64) ([]byte, error) {
	var out []byte
	for at := s.BaseOffset; at < s.NextOffset; {
		p.mu.RLock()
		if p.deleted || p.cuts != cuts {
			p.mu.RUnlock()
			return nil, errCleanOvertaken
		}
		n := len(out)
		var err error
		out, err = p.log.Read(out, at, s.NextOffset, cleanReadChunk, true)
		p.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			break
		}
		at = lastOffsetIn(out[n:]) + 1
	}
	return out, nil
}

// passRead is readSegment for a pass that stop may end, counting the
// bytes read in st.
func (p *Partition) passRead(s Segment, cuts uint64, stop <-chan struct{}, st *CleanStats) ([]byte, error) {
	if stopped(stop) {
		return nil, errCleanOvertaken
	}
	raw, err := p.readSegment(s, cuts)
	st.BytesRead += int64(len(raw))
	return raw, err
}

// eachBatch decodes each whole batch of raw, a log's bytes, in order.
func eachBatch(raw []byte, fn func(*decodedBatch) error) error {
	for len(raw) >= batchOverhead {
		info, err := ReadBatchHeader(raw)
		if err != nil {
			return err
		}
		d, err := decodeBatch(raw[:info.Size])
		if err != nil {
			return fmt.Errorf("batch at offset %d: %w", info.BaseOffset, err)
		}
		if err := fn(d); err != nil {
			return err
		}
		raw = raw[info.Size:]
	}
	return nil
}

// Clean runs one cleaning pass over the partition at now, whatever its
// dirty ratio (the store's cleaner weighs that; see cleaning.go), and
// says what it did. A partition of a topic that does not compact, or
// whose log has nothing cleanable, is left alone. A truncation meanwhile
// ends the pass early, without error: what was swapped in stays, the
// rest waits for the next pass. O(bytes of the section) reads and
// writes, and a map of the keys of its dirty part.
func (p *Partition) Clean(now time.Time) (CleanStats, error) { return p.cleanUntil(now, nil) }

// cleanUntil is Clean, ended early, without error, when stop is closed
// (the store closing): between two segments, what was swapped in stays.
func (p *Partition) cleanUntil(now time.Time, stop <-chan struct{}) (CleanStats, error) {
	p.mu.RLock()
	if p.deleted {
		p.mu.RUnlock()
		return CleanStats{}, p.errDeleted()
	}
	sc, _, _, _, err := p.scopeLocked(now)
	p.mu.RUnlock()
	if err != nil || !sc.cfg.Cleanup.Compacts() || len(sc.segs) == 0 {
		return CleanStats{}, err
	}
	st, err := p.clean(sc, now, stop)
	if errors.Is(err, errCleanOvertaken) || errors.Is(err, ErrSegmentChanged) {
		p.cfg.log.Debug("cleaning overtaken", zap.String("topic", p.topic.Name), zap.Int32("partition", p.index), zap.Error(err))
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("storage: clean %s-%d: %w", p.topic.Name, p.index, err)
	}
	return st, nil
}

// clean is Clean's pass over the section sc (steps 2 and 3 above).
func (p *Partition) clean(sc cleanScope, now time.Time, stop <-chan struct{}) (CleanStats, error) {
	var st CleanStats
	latest := make(map[string]int64)
	end := sc.segs[len(sc.segs)-1].NextOffset // where the mapped part ends
	for i, s := range sc.segs {
		if s.NextOffset <= sc.firstDirty {
			continue
		}
		raw, err := p.passRead(s, sc.cuts, stop, &st)
		if err != nil {
			return st, err
		}
		err = eachBatch(raw, func(d *decodedBatch) error {
			if sc.abortedBatch(d) {
				return nil
			}
			for _, r := range d.recs {
				if off := d.info.BaseOffset + int64(r.OffsetDelta); r.Key != nil && off >= sc.firstDirty {
					latest[string(r.Key)] = off
				}
			}
			return nil
		})
		if err != nil {
			return st, err
		}
		if len(latest) >= p.cfg.cleanerMapKeys && i < len(sc.segs)-1 {
			end = s.NextOffset
			break
		}
	}
	horizon := now.Add(sc.cfg.DeleteRetention).UnixMilli()
	for _, s := range sc.segs {
		if s.BaseOffset >= end {
			break
		}
		raw, err := p.passRead(s, sc.cuts, stop, &st)
		if err != nil {
			return st, err
		}
		kept, removed, changed, err := cleanSegment(raw, latest, &sc, now.UnixMilli(), horizon)
		if err != nil {
			return st, err
		}
		if !changed {
			continue
		}
		if err := p.replace(s, kept, sc.cuts); err != nil {
			return st, err
		}
		st.Segments++
		st.RecordsRemoved += removed
		st.BytesCleaned += s.Size
		for _, b := range kept {
			st.BytesKept += int64(b.info.Size)
		}
	}
	p.mu.Lock()
	if p.cuts == sc.cuts && end > p.cleanedTo {
		p.cleanedTo = end
		p.writeCleanedLocked()
	}
	p.mu.Unlock()
	return st, nil
}

// readCleanedLocked sets the first dirty offset of a log just opened to
// what its checkpoint kept, if it keeps one (CleanerCheckpointer), within
// the log. One that does not read is logged and ignored: the first pass
// maps the whole log, as after a first start.
//
// REQUIRES: p.mu held for writing, or p not yet shared.
func (p *Partition) readCleanedLocked() {
	cp, ok := p.log.(CleanerCheckpointer)
	if !ok {
		return
	}
	kept, found, err := cp.ReadCleanedTo()
	if err != nil {
		p.cfg.log.Warn("unreadable cleaner checkpoint: the whole log is dirty", zap.String("topic", p.topic.Name),
			zap.Int32("partition", p.index), zap.Error(err))
	}
	if found && err == nil {
		p.cleanedTo = min(kept, p.log.Bounds().End)
	}
}

// writeCleanedLocked keeps the first dirty offset, if the log keeps one. A
// failure is logged: the next pass maps more, nothing else.
//
// REQUIRES: p.mu held for writing.
func (p *Partition) writeCleanedLocked() {
	if cp, ok := p.log.(CleanerCheckpointer); ok {
		if err := cp.WriteCleanedTo(p.cleanedTo); err != nil {
			p.cfg.log.Warn("writing the cleaner checkpoint", zap.String("topic", p.topic.Name),
				zap.Int32("partition", p.index), zap.Error(err))
		}
	}
}

// cleanSegment rewrites raw, a segment's batches, against latest (see
// step 3 above); nowMs and horizon (now plus delete.retention.ms) decide
// the tombstones. It returns the batches kept, how many records went, and
// whether anything changed at all.
func cleanSegment(raw []byte, latest map[string]int64, sc *cleanScope, nowMs, horizon int64) (kept []*Batch, removed int64, changed bool, err error) {
	keep := sc.keep
	err = eachBatch(raw, func(d *decodedBatch) error {
		// raw follows eachBatch's walk: what is left from d on.
		last := d.info.Size == len(raw) // the segment's last batch
		raw = raw[d.info.Size:]
		if d.whole() {
			b, marked, err := sc.cleanMarker(d, nowMs, horizon, last && keep.extents)
			if err != nil {
				return err
			}
			if b != nil {
				kept = append(kept, b)
			}
			changed = changed || marked
			return nil
		}
		if d.info.Transactional {
			sc.txnSeen[d.info.ProducerID] = true
		}
		own, has := d.horizon()
		expired := has && nowMs >= own
		recs := d.recs[:0:0]
		tombstone := false
		aborted := sc.abortedBatch(d)
		for _, r := range d.recs {
			if aborted {
				break // every record of it goes
			}
			off := d.info.BaseOffset + int64(r.OffsetDelta)
			if !keepRecord(r, off, latest, expired) {
				continue
			}
			tombstone = tombstone || r.Value == nil
			recs = append(recs, r)
		}
		setHorizon := tombstone && !has
		if len(recs) == len(d.recs) && !setHorizon {
			kept = append(kept, &Batch{raw: d.raw, info: d.info})
			return nil
		}
		changed = true
		removed += int64(len(d.recs) - len(recs))
		if len(recs) == 0 && !keep.producers[d.info.BaseOffset] && !(last && keep.extents) {
			return nil
		}
		h := int64(-1)
		switch {
		case setHorizon:
			h = horizon
		case has && tombstone:
			h = own // still before it: keep it
		}
		b, err := d.rewrite(recs, h)
		if err != nil {
			return fmt.Errorf("rewrite the batch at %d: %w", d.info.BaseOffset, err)
		}
		kept = append(kept, b)
		return nil
	})
	return kept, removed, changed, err
}

// keepRecord says whether the cleaner keeps r, at offset off: it has a
// key, that key's latest offset is not after it, and it is not a
// tombstone past its batch's delete horizon (expired).
func keepRecord(r kmsg.Record, off int64, latest map[string]int64, expired bool) bool {
	if r.Key == nil {
		return false
	}
	if last, ok := latest[string(r.Key)]; ok && last > off {
		return false
	}
	return r.Value != nil || !expired
}

// replace swaps kept in for s, unless a truncation happened since cuts. A
// log that stages its replacements (StagedReplacer) writes kept before
// the partition's lock is taken, so that the lock is held only for the
// swap.
func (p *Partition) replace(s Segment, kept []*Batch, cuts uint64) error {
	swap := func() error { return p.log.Replace(s, kept) }
	if sr, ok := p.log.(StagedReplacer); ok {
		staged, err := sr.StageReplace(s, kept)
		if err != nil {
			return err
		}
		swap = staged.Commit
		defer func() {
			if swap != nil {
				staged.Abort() // not committed: overtaken
			}
		}()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted || p.cuts != cuts {
		return errCleanOvertaken
	}
	err := swap()
	swap = nil
	if err != nil {
		return err
	}
	if m := p.maxTimestamp; m.Size > 0 && m.BaseOffset >= s.BaseOffset && m.BaseOffset < s.NextOffset {
		// The batch ListOffsets' max timestamp names may have gone:
		// found again.
		p.maxTimestamp = BatchInfo{}
		_ = p.log.Scan(p.log.Bounds().Start, func(info BatchInfo) bool { p.noteTimestampLocked(info); return true })
	}
	return nil
}

// stopped reports whether stop, nil for never, is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
