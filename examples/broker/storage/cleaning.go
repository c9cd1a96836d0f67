package storage

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// The store's log cleaner: which partitions are cleaned, in what order,
// and when (Kafka's LogCleanerManager and its cleaner thread).
//
// Every log.cleaner.backoff.ms (WithCleanerInterval, 15 s by default) a
// run on the library's timer starts a pass over the store, unless the
// last is still going: the timer's task only starts a goroutine, as a
// timer task must not block, and that goroutine ends with its pass; no
// goroutine sleeps between passes. A pass weighs each partition of a
// compacted topic: its dirty ratio (the dirty bytes of its cleanable
// section over the section's bytes, cleaner.go) against
// min.cleanable.dirty.ratio, or the age of its first dirty segment
// against max.compaction.lag.ms, which forces a clean whatever the
// ratio. Those that qualify are cleaned one after the other, the
// dirtiest first, as Kafka's cleaner picks the log with the largest
// ratio. Close stops the timer's schedule and waits for the pass, which
// stops at the next segment.

// DefaultCleanerInterval is WithCleanerInterval's default, Kafka's
// log.cleaner.backoff.ms.
const DefaultCleanerInterval = 15 * time.Second

// DefaultCleanerMapKeys is WithCleanerMapKeys' default: about what
// Kafka's 128 MiB log.cleaner.dedupe.buffer.size holds (24 bytes a key,
// at a load factor of 0.9).
const DefaultCleanerMapKeys = 5 << 20

// cleanCandidate is a partition a pass may clean, with its ratio.
type cleanCandidate struct {
	p     *Partition
	ratio float64
}

// Clean runs one pass of the log cleaner now: every partition of a
// compacted topic whose dirty ratio reaches its min.cleanable.dirty.ratio,
// or whose first dirty segment is older than its max.compaction.lag.ms, is
// cleaned, the dirtiest first (Partition.Clean). It returns what was
// cleaned in all, and the first error met; it goes on after one. The
// store's timer calls it every cleaner interval; passes must not overlap
// (the timer's never do), and a test calls it alone.
func (s *Store) Clean() (CleanStats, error) {
	now := s.cfg.clock.Now()
	var cands []cleanCandidate
	for _, t := range s.Topics() {
		if !t.Config().Cleanup.Compacts() {
			continue
		}
		for _, p := range t.Partitions {
			if ratio, ok := p.cleanable(now); ok {
				cands = append(cands, cleanCandidate{p, ratio})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b cleanCandidate) int { return cmp.Compare(b.ratio, a.ratio) })
	var all CleanStats
	var first error
	for _, c := range cands {
		if stopped(s.stop) { // closing: the rest waits for the next start
			return all, first
		}
		st, err := c.p.cleanUntil(s.cfg.clock.Now(), s.stop)
		if err != nil && first == nil {
			first = err
		}
		all.add(st)
		if st.Segments > 0 {
			s.cfg.log.Debug("cleaned", zap.String("topic", c.p.topic.Name), zap.Int32("partition", c.p.index),
				zap.Float64("dirty_ratio", c.ratio), zap.Int("segments", st.Segments),
				zap.Int64("bytes_before", st.BytesCleaned), zap.Int64("bytes_after", st.BytesKept))
		}
	}
	return all, first
}

// add adds o's counts to st.
func (st *CleanStats) add(o CleanStats) {
	st.BytesRead += o.BytesRead
	st.BytesCleaned += o.BytesCleaned
	st.BytesKept += o.BytesKept
	st.Segments += o.Segments
	st.RecordsRemoved += o.RecordsRemoved
}

// cleanable returns p's dirty ratio, and whether a pass should clean it
// now (see above).
func (p *Partition) cleanable(now time.Time) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, false
	}
	sc, dirty, total, age, err := p.scopeLocked(now)
	if err != nil || len(sc.segs) == 0 || total == 0 {
		return 0, false
	}
	ratio := float64(dirty) / float64(total)
	overdue := sc.cfg.MaxCompactionLag > 0 && age > sc.cfg.MaxCompactionLag
	return ratio, ratio >= sc.cfg.DirtyRatio || overdue
}

// DirtyRatio returns the dirty ratio of the partition's cleanable section
// at now (see cleaner.go): 0 when nothing is cleanable.
func (p *Partition) DirtyRatio(now time.Time) float64 {
	r, _ := p.cleanable(now)
	return r
}

// startCleaner schedules the cleaner's passes on a timer of the library's,
// the store's own unless WithCleanerTimer gave one.
func (s *Store) startCleaner() error {
	if s.cfg.cleanerInterval <= 0 {
		return nil
	}
	tm := s.cfg.cleanerTimer
	if tm == nil {
		var err error
		if tm, err = timer.New(timer.WithLogger(s.cfg.log)); err != nil {
			return err
		}
		s.ownTimer = tm
	}
	d := s.cfg.cleanerInterval
	p, err := tm.ScheduleWithFixedDelay(d, d, s.startPass)
	if err != nil {
		if s.ownTimer != nil {
			s.ownTimer.Close()
		}
		return err
	}
	s.cleanRun = p
	return nil
}

// startPass starts a pass on a goroutine of its own, unless one is
// running: a timer task must not block.
func (s *Store) startPass() {
	if !s.passing.CompareAndSwap(false, true) {
		return
	}
	s.passes.Go(func() {
		defer s.passing.Store(false)
		st, err := s.Clean()
		if err != nil {
			s.cfg.log.Warn("log cleaner", zap.Error(err))
		}
		if st.Segments > 0 {
			s.cfg.log.Info("log cleaner pass", zap.Int("segments", st.Segments),
				zap.Int64("bytes_before", st.BytesCleaned), zap.Int64("bytes_after", st.BytesKept),
				zap.Int64("records_removed", st.RecordsRemoved))
		}
	})
}

// stopCleaner ends the schedule, waits for a pass under way, and closes
// the store's own timer.
func (s *Store) stopCleaner() {
	if s.cleanRun != nil {
		s.cleanRun.StopAndWait() // no pass starts after it
	}
	s.passes.Wait()
	if s.ownTimer != nil {
		s.ownTimer.Close()
	}
}
