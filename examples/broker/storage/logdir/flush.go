package logdir

import "time"

// flushEvery fsyncs every log with unflushed batches each interval
// (log.flush.interval.ms) until stop is closed: a batch waits at most
// about one interval, plus the fsyncs before its own, to reach the disk.
// The logs are visited outside d.mu; each fsyncs outside its own lock.
func (d *Dir) flushEvery(interval time.Duration) {
	defer close(d.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
			d.mu.Lock()
			logs := make([]*Log, 0, len(d.logs))
			for l := range d.logs {
				logs = append(logs, l)
			}
			d.mu.Unlock()
			for _, l := range logs {
				l.flushIfDirty()
			}
		}
	}
}
