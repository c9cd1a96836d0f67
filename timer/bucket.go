package timer

import "math"

// noExpiry marks a bucket that is not in the delay queue.
const noExpiry = math.MinInt64

// A bucket is one slot of a level: a circular doubly-linked list of tasks
// whose deadlines fall in the slot's span, with a sentinel so that linking and
// unlinking never branch on emptiness. Its expiry is the tick at which the
// slot's span starts in the current turn. A bucket holding tasks sits in the
// delay queue, keyed by when it must next be flushed: its expiry, or lead
// ticks earlier for a coarse bucket holding many tasks (see wheel.place). An
// empty bucket may keep its expiry out of the queue after an early flush.
//
// REQUIRES: every method runs with the owning shard's mu held.
type bucket struct {
	root   Task   // sentinel: root.next is the oldest task, root.prev the newest
	expiry int64  // first tick of the span this turn, or noExpiry
	key    int64  // tick the delay queue yields the bucket at: expiry or expiry-lead
	lv     *level // the level owning the bucket; immutable
	index  int    // position in the delay queue, -1 when not queued
	count  int    // tasks placed this turn; cancels are not subtracted
}

func (b *bucket) init(lv *level) {
	b.root.next = &b.root
	b.root.prev = &b.root
	b.lv = lv
	b.reset()
}

// reset ends the bucket's turn.
func (b *bucket) reset() {
	b.expiry = noExpiry
	b.key = noExpiry
	b.index = -1
	b.count = 0
}

func (b *bucket) empty() bool { return b.root.next == &b.root }

// pushBack links t at the tail. The tail was linked last, so its cache line is
// usually warm.
func (b *bucket) pushBack(t *Task) {
	last := b.root.prev
	t.prev = last
	t.next = &b.root
	last.next = t
	b.root.prev = t
}

// unlink takes t out of whatever list holds it, in O(1), without knowing the
// list: the sentinel makes every neighbour a real node.
func unlink(t *Task) {
	t.prev.next = t.next
	t.next.prev = t.prev
	t.next = nil
	t.prev = nil
}

// initRoot makes root an empty list's sentinel.
func initRoot(root *Task) { root.next, root.prev = root, root }

// moveAllTo splices every task of b onto the tail of the list rooted at dst,
// in O(1), leaving b empty.
func (b *bucket) moveAllTo(dst *Task) {
	if b.empty() {
		return
	}
	first, last := b.root.next, b.root.prev
	tail := dst.prev
	tail.next = first
	first.prev = tail
	last.next = dst
	dst.prev = last
	b.root.next = &b.root
	b.root.prev = &b.root
}
