package records

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

// Records returns the number of records applied. O(1).
func (r *Replay) Records() int64 { return r.records }

// Live returns the number of live records: the latest value of each key,
// tombstones, offsets pending in transactions and the metadata of groups
// without a protocol type left out.
// These are the records Rewrite writes; the others applied are dead.
// O(1).
func (r *Replay) Live() int64 { return r.live }

// Rewrite returns the live records as batches (Batch), timestamped now,
// group by group in name order, each group's metadata before its offsets,
// then the consumer groups' (consumer.go), then the share groups'
// (share.go):
// a compaction of what was applied. Replayed after the records applied,
// or instead of them, they give the same groups, and so does any prefix
// of them after those records (each record holds its key's latest
// value), so a partition may drop everything before the first batch once
// the last is durable. Offsets pending in open transactions are left
// out: a rewrite while one is open would lose them, and would make the
// committed offsets newer than them (the compaction waits for the
// transactions to end). A batch holds at most maxRecords records, and
// stops before the record that would take its records past maxBytes
// (a record larger than that is alone in its batch). O(live records).
func (r *Replay) Rewrite(now time.Time, maxRecords, maxBytes int) [][]byte {
	var out [][]byte
	var recs []kmsg.Record
	size := 0
	flush := func() {
		if len(recs) > 0 {
			out = append(out, Batch(now, recs))
			recs, size = recs[:0], 0
		}
	}
	add := func(rec kmsg.Record) {
		n := len(rec.Key) + len(rec.Value) + 16 // the record's framing, at most
		for _, h := range rec.Headers {
			n += len(h.Key) + len(h.Value) + 10
		}
		if len(recs) == maxRecords || (len(recs) > 0 && size+n > maxBytes) {
			flush()
		}
		recs = append(recs, rec)
		size += n
	}
	for _, name := range slices.Sorted(maps.Keys(r.groups)) {
		gs := r.groups[name]
		if gs.hasMeta() {
			add(Group(*gs.meta))
		}
		tps := slices.SortedFunc(maps.Keys(gs.offsets), func(x, y group.TopicPartition) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
		})
		for _, tp := range tps {
			add(Offset(name, gs.offsets[tp]))
		}
	}
	r.consumerRecords(add)
	r.shareRecords(add)
	flush()
	return out
}
