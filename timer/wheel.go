package timer

import "math"

// A level is one ring of the hierarchy. Level k has wheel-size buckets, each
// covering unit = size^k ticks, so the ring spans size^(k+1) ticks from base.
type level struct {
	unit    int64 // ticks covered by one bucket
	span    int64 // ticks covered by the ring: unit × size, saturated
	base    int64 // first tick of the current bucket: cur rounded down to unit
	buckets []bucket
}

// wheel is the hierarchy of levels plus the delay queue of their buckets.
// All times are ticks (multiples of the timer's tick) since the clock origin.
//
// REQUIRES: every method runs with the owning Timer's mu held.
type wheel struct {
	size   int64
	cur    int64 // every bucket due at or before cur has been flushed
	levels []level
	q      queue
}

func (w *wheel) init(size int, start int64) {
	w.size = int64(size)
	w.cur = start
	w.addLevel()
}

// addLevel creates the next coarser ring (Kafka's overflow wheel) on demand.
func (w *wheel) addLevel() {
	unit := int64(1)
	if n := len(w.levels); n > 0 {
		unit = w.levels[n-1].span
	}
	span := int64(math.MaxInt64)
	if unit <= math.MaxInt64/w.size {
		span = unit * w.size
	}
	lv := level{unit: unit, span: span, base: w.cur - w.cur%unit, buckets: make([]bucket, w.size)}
	for i := range lv.buckets {
		lv.buckets[i].init()
	}
	w.levels = append(w.levels, lv)
}

// advanceTo moves the wheel's time to tick. It is only called when no queued
// bucket expires at or before tick, so no slot can be reused while it still
// holds tasks of its previous turn.
func (w *wheel) advanceTo(tick int64) {
	w.cur = tick
	for i := range w.levels {
		lv := &w.levels[i]
		lv.base = tick - tick%lv.unit
	}
}

// place links t, whose deadline is tick T > cur, into the finest level whose
// ring still reaches T. It returns the bucket's new expiry if the bucket had
// to join the delay queue, else noExpiry. O(levels), O(1) in practice.
//
// A task in a level-0 bucket is due exactly at the bucket's expiry. A task in
// a coarser bucket is re-placed when the bucket expires, at the start of its
// span, and falls to a finer level; it never runs from a coarse bucket, which
// is why nothing runs early.
func (w *wheel) place(t *Task, T int64) int64 {
	for i := 0; ; i++ {
		if i == len(w.levels) {
			w.addLevel()
		}
		lv := &w.levels[i]
		if T-lv.base >= lv.span {
			continue
		}
		vid := T
		if lv.unit != 1 {
			vid = T / lv.unit
		}
		b := &lv.buckets[vid%w.size]
		b.pushBack(t)
		if exp := vid * lv.unit; b.expiry != exp {
			// The slot starts a new turn. Its previous turn was flushed
			// already, so it is not queued (verify checks this).
			b.expiry = exp
			w.q.push(b)
			return exp
		}
		return noExpiry
	}
}
