package timer

// Test-only views of the wheel's internals.

// span is a bucket's range in ticks, both ends inclusive.
type span struct{ from, to int64 }

// layout returns, for each level from the finest, its buckets' spans in ring
// order starting at the current bucket.
func (tm *Timer) layout() [][]span {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	var out [][]span
	for _, lv := range tm.w.levels {
		var row []span
		for i := int64(0); i < tm.w.size; i++ {
			from := lv.base + i*lv.unit
			row = append(row, span{from, from + lv.unit - 1})
		}
		out = append(out, row)
	}
	return out
}

// locate returns the 1-based level and 0-based slot holding t, or 0, -1 when
// it is not in any bucket.
func (tm *Timer) locate(t *Task) (level, slot int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for k, lv := range tm.w.levels {
		for s := range lv.buckets {
			b := &lv.buckets[s]
			for x := b.root.next; x != &b.root; x = x.next {
				if x == t {
					return k + 1, s
				}
			}
		}
	}
	return 0, -1
}

// check runs the full structural check.
func (tm *Timer) check() error {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.checkLocked(true)
}
