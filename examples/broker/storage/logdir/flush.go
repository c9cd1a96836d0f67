package logdir

import (
	"time"

	"go.uber.org/zap"
)

// background runs until stop is closed: every log.flush.interval.ms it
// fsyncs the logs with unflushed batches (a batch waits at most about one
// interval, plus the fsyncs before its own, to reach the disk), and every
// log.flush.offset.checkpoint.interval.ms it writes the recovery points if
// any moved. The logs are visited outside d.mu; each fsyncs outside its
// own lock.
func (d *Dir) background() {
	defer close(d.done)
	flush, checkpoint := ticker(d.cfg.flushInterval), ticker(d.cfg.checkpointInterval)
	defer flush.Stop()
	defer checkpoint.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-flush.C:
			d.mu.Lock()
			logs := make([]*Log, 0, len(d.logs))
			for l := range d.logs {
				logs = append(logs, l)
			}
			d.mu.Unlock()
			for _, l := range logs {
				l.flushIfDirty()
			}
		case <-checkpoint.C:
			if err := d.checkpoint(); err != nil {
				d.cfg.log.Warn("recovery checkpoint not written; retrying at the next interval", zap.Error(err))
			}
		}
	}
}

// ticker returns a ticker every d, or one that never ticks if d <= 0.
func ticker(d time.Duration) *time.Ticker {
	if d <= 0 {
		t := time.NewTicker(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTicker(d)
}
