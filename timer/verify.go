package timer

import "fmt"

// verifyLimit bounds the tasks verifyLocked walks after each advance under
// the invariants build, so that -race runs with millions of tasks stay fast.
const verifyLimit = 1 << 12

// verifyLocked panics if the wheel's structure is inconsistent.
//
// REQUIRES: sh.mu held.
func (tm *Timer) verifyLocked(sh *shard) {
	if err := tm.checkLocked(sh, sh.pending <= verifyLimit); err != nil {
		panic(err)
	}
}

// checkLocked checks the delay queue always, and with tasks every linked task:
// that it sits in the bucket its deadline maps to, and that the count of
// linked tasks is the pending count.
//
// REQUIRES: sh.mu held.
func (tm *Timer) checkLocked(sh *shard, tasks bool) error {
	q := sh.w.q.h
	for i, b := range q {
		if b.index != i {
			return fmt.Errorf("timer: queue slot %d holds a bucket indexed %d", i, b.index)
		}
		if i > 0 && q[(i-1)/2].key > b.key {
			return fmt.Errorf("timer: queue heap order broken at %d", i)
		}
	}
	var n int64
	for t := sh.firing.next; t != &sh.firing; t = t.next {
		n++
	}
	for k, lv := range sh.w.levels {
		for t := lv.cascade.next; t != &lv.cascade; t = t.next {
			n++
		}
		if lv.base != floorDiv(sh.w.cur, lv.unit)*lv.unit {
			return fmt.Errorf("timer: level %d base %d, cur %d", k, lv.base, sh.w.cur)
		}
		for s := range lv.buckets {
			b := &lv.buckets[s]
			queued := b.index >= 0
			if queued && b.expiry == noExpiry {
				return fmt.Errorf("timer: level %d bucket %d queued=%v expiry=%d", k, s, queued, b.expiry)
			}
			if !queued && !b.empty() {
				return fmt.Errorf("timer: level %d bucket %d holds tasks but is not queued", k, s)
			}
			if queued && (b.key <= sh.w.cur || b.key > b.expiry || (b.key < b.expiry && b.key != b.expiry-lv.lead)) {
				return fmt.Errorf("timer: level %d bucket %d keyed %d, expiry %d, lead %d, wheel at %d", k, s, b.key, b.expiry, lv.lead, sh.w.cur)
			}
			if !tasks {
				continue
			}
			for t := b.root.next; t != &b.root; t = t.next {
				n++
				T := ceilDiv(t.due, tm.tick)
				if t.tm != tm || tm.shardOf(t) != sh || t.next.prev != t || T < b.expiry || T-b.expiry >= lv.unit {
					return fmt.Errorf("timer: task due tick %d misplaced in level %d bucket %d (expiry %d)", T, k, s, b.expiry)
				}
			}
		}
	}
	if tasks && n != sh.pending {
		return fmt.Errorf("timer: %d tasks linked, %d pending", n, sh.pending)
	}
	return nil
}
