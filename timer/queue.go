package timer

// queue is the delay queue: a binary min-heap of buckets ordered by key.
// It holds buckets, not tasks, so it never has more than levels × wheel-size
// entries (a few hundred) however many tasks are pending; a bucket is pushed
// only when its expiry changes, which happens once per bucket per turn of its
// level.
//
// REQUIRES: every method runs with the owning shard's mu held.
type queue struct{ h []*bucket }

// peek returns the earliest bucket, or nil.
func (q *queue) peek() *bucket {
	if len(q.h) == 0 {
		return nil
	}
	return q.h[0]
}

func (q *queue) push(b *bucket) {
	b.index = len(q.h)
	q.h = append(q.h, b)
	q.up(b.index)
}

// fix restores the order after the key of the bucket at i decreased.
func (q *queue) fix(i int) { q.up(i) }

// pop removes and returns the earliest bucket.
func (q *queue) pop() *bucket {
	n := len(q.h) - 1
	b := q.h[0]
	q.swap(0, n)
	q.h[n] = nil
	q.h = q.h[:n]
	if n > 0 {
		q.down(0)
	}
	b.index = -1
	return b
}

func (q *queue) less(i, j int) bool { return q.h[i].key < q.h[j].key }

func (q *queue) swap(i, j int) {
	q.h[i], q.h[j] = q.h[j], q.h[i]
	q.h[i].index = i
	q.h[j].index = j
}

func (q *queue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *queue) down(i int) {
	n := len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			return
		}
		q.swap(i, m)
		i = m
	}
}
