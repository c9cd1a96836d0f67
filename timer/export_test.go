package timer

// Test-only views of the wheel's internals.

// span is a bucket's range in ticks, both ends inclusive.
type span struct{ from, to int64 }

// layout returns, for each level from the finest, its buckets' spans in ring
// order starting at the current bucket.
func (tm *Timer) layout() [][]span {
	sh := tm.widest()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out [][]span
	for _, lv := range sh.w.levels {
		var row []span
		for i := int64(0); i < sh.w.size; i++ {
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
	sh := tm.shardOf(t)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, lv := range sh.w.levels {
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
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		err := tm.checkLocked(sh, true)
		sh.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// widest returns the shard with the most levels: the one the layout of the
// coarsest task scheduled so far shows.
func (tm *Timer) widest() *shard {
	w, most := &tm.shards[0], 0
	for i := range tm.shards {
		sh := &tm.shards[i]
		sh.mu.Lock()
		if n := len(sh.w.levels); n > most {
			w, most = sh, n
		}
		sh.mu.Unlock()
	}
	return w
}
