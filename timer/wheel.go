package timer

import "math"

// A level is one ring of the hierarchy. Level k has wheel-size buckets, each
// covering unit = size^k ticks, so the ring spans size^(k+1) ticks from base.
type level struct {
	unit    int64   // ticks covered by one bucket
	span    int64   // ticks covered by the ring: unit × size, saturated
	lead    int64   // how early a crowded bucket is first flushed; 0 on level 0
	base    int64   // first tick of the current bucket: cur rounded down to unit
	baseVid int64   // base / unit: the current bucket's number
	cursor  int64   // slot of the current bucket: baseVid mod size
	div     divider // by unit
	buckets []bucket
	// cascade holds the tasks taken from this level's flushed buckets, to be
	// placed again. One list per level, worked finest first: a finer level's
	// tasks are due sooner, so they never wait behind a coarse bucket's.
	cascade Task
}

// wheel is the hierarchy of levels plus the delay queue of their buckets.
// All times are ticks (multiples of the timer's tick) since the clock origin.
//
// REQUIRES: every method runs with the owning shard's mu held.
type wheel struct {
	size    int64
	sizeDiv divider
	cur     int64    // every bucket due at or before cur has been flushed
	levels  []*level // pointers: a level's buckets and cascade list must not move
	q       queue
}

func (w *wheel) init(size int, start int64) {
	w.size = int64(size)
	w.sizeDiv = newDivider(uint64(size))
	w.cur = start
	w.addLevel()
}

// addLevel creates the next coarser ring (Kafka's overflow wheel) on demand.
func (w *wheel) addLevel() {
	unit, lead := int64(1), int64(0)
	if n := len(w.levels); n > 0 {
		unit = w.levels[n-1].span
		// Half a span, in whole buckets of the level below, so that the
		// finer ring can take what an early flush moves down.
		lead = (w.size / 2) * w.levels[n-1].unit
	}
	span := int64(math.MaxInt64)
	if unit <= math.MaxInt64/w.size {
		span = unit * w.size
	}
	lv := &level{unit: unit, span: span, lead: lead, div: newDivider(uint64(unit)), buckets: make([]bucket, w.size)}
	w.setBase(lv, w.cur)
	for i := range lv.buckets {
		lv.buckets[i].init(lv)
	}
	initRoot(&lv.cascade)
	w.levels = append(w.levels, lv)
}

// advanceTo moves the wheel's time to tick. It is only called when no queued
// bucket's key is at or before tick, so no slot can be reused while it still
// holds tasks of its previous turn.
func (w *wheel) advanceTo(tick int64) {
	w.cur = tick
	for _, lv := range w.levels {
		w.setBase(lv, tick)
	}
}

// setBase moves lv's current bucket to the one holding tick.
func (w *wheel) setBase(lv *level, tick int64) {
	vid := lv.div.floor(tick)
	lv.baseVid, lv.base = vid, vid*lv.unit
	lv.cursor = vid - w.sizeDiv.floor(vid)*w.size
}

// crowded is how many tasks make a coarse bucket crowded: moving that many
// to finer levels takes long enough (tens of microseconds) to make the
// earliest of them late if it is done when they fall due.
const crowded = 256

// place links t, whose deadline is tick T > cur, into the finest level whose
// ring still reaches T. If that changes the bucket's key (the bucket starts a
// new turn, or becomes crowded) it returns the new key, else noExpiry: the
// caller wakes a sleeping AdvanceClock when the key is earlier than its wake-up.
// O(levels), O(1) in practice.
//
// A task in a level-0 bucket is due exactly at the bucket's expiry. A task in
// a coarser bucket is placed again when the bucket is flushed, and falls to a
// finer level; it never runs from a coarse bucket, which is why nothing runs
// early. A coarse bucket is flushed when its span starts, as in Kafka, and a
// crowded one also lead ticks before: that early flush moves down every task
// the finer ring can already hold, so that none of them waits for the others
// to be moved when it falls due. The rest are due at least lead ticks after
// the bucket's final flush.
func (w *wheel) place(t *Task, T int64) int64 {
	for i := 0; ; i++ {
		if i == len(w.levels) {
			w.addLevel()
		}
		lv := w.levels[i]
		if T-lv.base >= lv.span {
			continue
		}
		vid := T
		if lv.unit != 1 {
			vid = lv.div.floor(T)
		}
		// T is less than a ring past base, so its slot is at most size-1
		// slots past the cursor: no division needed.
		slot := lv.cursor + (vid - lv.baseVid)
		if slot >= w.size {
			slot -= w.size
		}
		b := &lv.buckets[slot]
		b.pushBack(t)
		b.count++
		if exp := vid * lv.unit; b.expiry != exp {
			// The slot starts a new turn. Its previous turn was flushed
			// already, so it is not queued (verify checks this).
			b.expiry, b.key, b.count = exp, exp, 1
			w.q.push(b)
			return exp
		}
		if b.index < 0 {
			// The bucket had its early flush and this task is the first
			// the finer ring could not hold yet: flush it at its expiry.
			w.q.push(b)
			return b.key
		}
		if b.count == crowded && lv.lead > 0 && b.key == b.expiry && b.expiry-lv.lead > w.cur {
			b.key = b.expiry - lv.lead
			w.q.fix(b.index)
			return b.key
		}
		return noExpiry
	}
}
