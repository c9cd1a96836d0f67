package timer

// Stats is a snapshot of a Timer's counters.
type Stats struct {
	Pending int64 // tasks waiting in the wheel
	Fired   int64 // tasks handed over to run since New
	Panics  int64 // tasks whose Run panicked (recovered and logged)
	Wakeups int64 // times a waiting AdvanceClock woke up
	Flushed int64 // buckets flushed
	Levels  int   // levels created so far, in the shard with the most
	Shards  int   // wheels the tasks are split over (WithShards)
}

// Stats returns the timer's counters.
func (tm *Timer) Stats() Stats {
	levels, pending := 0, int64(0)
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		levels, pending = max(levels, len(sh.w.levels)), pending+sh.pending
		sh.mu.Unlock()
	}
	return Stats{
		Pending: pending,
		Fired:   tm.fired.Load(),
		Panics:  tm.panics.Load(),
		Wakeups: tm.wakeups.Load(),
		Flushed: tm.flushed.Load(),
		Levels:  levels,
		Shards:  len(tm.shards),
	}
}
