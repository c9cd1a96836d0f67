package offsetlog

import (
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/internal/atomicfile"
)

// maybeCompactLocked rewrites the file with only its live records (the
// latest value of each key, no tombstones) once the dead ones reach
// WithCompactAfter and outnumber the live: a compaction costs the live
// records, paid for by as many dead ones, so a change costs O(1) amortised.
// The new file replaces the old atomically (a temporary file, fsynced,
// renamed over it, the directory fsynced): a crash leaves one or the
// other. A compaction that fails before the rename is logged and leaves
// the log as it was; one that fails after it fails the log.
//
// REQUIRES: l.mu held.
func (l *Log) maybeCompactLocked() {
	live := l.st.live
	dead := l.next - live
	if dead < l.cfg.compactAfter || dead < live {
		return
	}
	data := l.liveBatches()
	if err := atomicfile.Write(l.cfg.sync, l.path, data); err != nil {
		l.cfg.log.Warn("offsets log compaction failed; the log goes on as it was", zap.Error(err))
		return
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		_ = l.fail(fmt.Errorf("offsetlog: reopen %s after compaction: %w", l.path, err))
		return
	}
	_ = l.f.Close()
	l.f, l.size, l.next, l.flushed = f, int64(len(data)), live, live
	l.cfg.log.Info("compacted the offsets log", zap.Int64("records_kept", live), zap.Int64("records_dropped", dead))
}

// batchRecords bounds the records of a batch compaction writes.
const batchRecords = 1000

// liveBatches encodes the live records, group by group, each group's
// metadata before its offsets, in batches of at most batchRecords records
// numbered from offset 0.
//
// REQUIRES: l.mu held.
func (l *Log) liveBatches() []byte {
	var out []byte
	var recs []kmsg.Record
	base := int64(0)
	flush := func() {
		if len(recs) > 0 {
			out = append(out, encodeBatch(base, time.Now(), recs)...)
			base += int64(len(recs))
			recs = recs[:0]
		}
	}
	// add flushes a full batch first, whichever record comes next.
	add := func(r kmsg.Record) {
		if len(recs) == batchRecords {
			flush()
		}
		recs = append(recs, r)
	}
	for _, g := range l.st.sortedGroups() {
		gs := l.st.groups[g]
		if gs.ptype != "" {
			add(kmsg.Record{Key: groupKey(g), Value: groupValue(gs.ptype)})
		}
		for _, o := range gs.sortedOffsets() {
			add(kmsg.Record{Key: offsetKey(g, o.TopicPartition), Value: offsetValue(o)})
		}
	}
	flush()
	return out
}
