package cache

import (
	"sync"
)

// Isolation is a fetch's isolation level, as Kafka numbers it.
type Isolation int8

// The isolation levels.
const (
	ReadUncommitted Isolation = 0
	ReadCommitted   Isolation = 1
)

// State is what upstream last said of a partition, in its latest fetch
// response: the proxy answers with it, never with offsets of its own.
type State struct {
	HighWatermark int64
	LastStable    int64 // -1 when upstream does not say
	LogStart      int64 // -1 when upstream does not say
}

// Result is a read's answer: the bytes of whole batches, and the state to
// answer with.
type Result struct {
	Records []byte // nil when there is nothing to read yet
	State
}

// batch is one cached batch: where it sits in the buffer of its Append.
type batch struct {
	Header
	buf []byte // the Append's buffer, shared by its batches
	pos int    // where the batch starts in buf
}

func (b *batch) bytes() []byte { return b.buf[b.pos : b.pos+b.Size] }

// exact reports whether read_committed may be answered with b without the
// aborted-transaction index: b is neither transactional nor a control
// batch, and lies below the last stable offset.
func (b *batch) exact(lastStable int64) bool {
	return !b.Transactional && b.Last < lastStable
}

// Partition is one tailed partition's recent batches and upstream state.
// See the package documentation for what it answers.
type Partition struct {
	limit int // bytes of batches held before the oldest go; immutable

	mu      sync.RWMutex // guards the following
	batches []batch      // in offset order; batches[0] is the oldest
	size    int          // bytes of batches held
	from    int64        // the first offset answered
	end     int64        // the offset the tailer reads next
	state   State
}

// NewPartition returns an empty partition whose tailer starts reading at
// start, holding up to limit bytes of batches (and always the newest one).
func NewPartition(start int64, limit int) *Partition {
	return &Partition{limit: limit, from: start, end: start,
		state: State{HighWatermark: start, LastStable: -1, LogStart: -1}}
}

// End returns the offset the tailer reads next: one past the last batch
// appended, or the start.
func (p *Partition) End() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.end
}

// Span returns the offsets answered from the cache, [from, end), and the
// bytes held.
func (p *Partition) Span() (from, end int64, size int) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.from, p.end, p.size
}

// State returns what upstream last said of the partition.
func (p *Partition) State() State {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state
}

// Append adds the whole batches of records that end at or after End (those
// before it are held already), copied into a buffer of their own, sets
// the state to st, and evicts the oldest batches beyond the limit. It
// returns the number of batches added; a partial batch at the end of
// records is left for the next fetch. A batch that does not follow the
// last one held, or an old message format, is an error: nothing is added,
// and the state is not changed.
func (p *Partition) Append(records []byte, st State) (int, error) {
	end := p.End() // the tailer is the only writer: end does not move under it
	var (
		hs    []Header
		first = -1 // the byte where the first new batch starts
		pos   int
	)
	_, err := Split(records, func(h Header) {
		if h.Last >= end {
			if first < 0 {
				first = pos
			}
			hs = append(hs, h)
		}
		pos += h.Size
	})
	if err != nil {
		return 0, err
	}
	var buf []byte
	if len(hs) > 0 {
		buf = append([]byte(nil), records[first:pos]...)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	at := 0
	for _, h := range hs {
		p.batches = append(p.batches, batch{Header: h, buf: buf, pos: at})
		p.size += h.Size
		at += h.Size
		p.end = h.Last + 1
	}
	p.state = st
	p.evictLocked()
	return len(hs), nil
}

// evictLocked drops the oldest batches while more than the limit is held,
// keeping the newest.
//
// REQUIRES: p.mu held.
func (p *Partition) evictLocked() {
	n := 0
	for p.size > p.limit && len(p.batches)-n > 1 {
		p.size -= p.batches[n].Size
		p.batches[n] = batch{} // its buffer may go
		n++
	}
	if n == 0 {
		return
	}
	p.batches = p.batches[n:]
	p.from = p.batches[0].Base
	if cap(p.batches) > 4*len(p.batches)+16 {
		// Reslicing keeps the array: copy out once the front is mostly
		// dead, so the array does not grow without bound.
		p.batches = append([]batch(nil), p.batches...)
	}
}

// covers reports whether o is answered from the cache, and the index of the
// first batch ending at or after o (len(p.batches) when o is at or past
// the end).
//
// REQUIRES: p.mu held.
func (p *Partition) coversLocked(o int64) (int, bool) {
	if o < p.from || (p.state.LogStart >= 0 && o < p.state.LogStart) || o > max(p.end, p.state.HighWatermark) {
		return 0, false
	}
	// The first batch whose last offset is at or after o.
	lo, hi := 0, len(p.batches)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.batches[m].Last < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, true
}

// Readable reports how many bytes a fetch at o could read now, counting
// whole batches up to max (Kafka counts a partition up to its
// partition_max_bytes when it decides whether a fetch has its min_bytes),
// and whether the cache answers o at all: false means the fetch must read
// o from upstream. O(log batches + batches read).
func (p *Partition) Readable(o int64, iso Isolation, max int) (int, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	i, ok := p.coversLocked(o)
	if !ok {
		return 0, false
	}
	n := 0
	for ; i < len(p.batches) && n < max; i++ {
		b := &p.batches[i]
		if iso == ReadCommitted && !b.exact(p.state.LastStable) {
			if n == 0 && b.Transactional {
				return 0, false
			}
			break
		}
		n += b.Size
	}
	return min(n, max), true
}

// Read returns the batches a fetch at o gets: from the one holding o (or
// the first after it), while they fit in max bytes, or the first one alone
// whatever its size with minOne (see Trim). ok is false when the cache does
// not answer o (see Readable): the fetch must read it from upstream. A
// fetch at the end gets no records and the state. O(log batches + batches
// read), and a copy only when the batches read came from several Appends.
func (p *Partition) Read(o int64, iso Isolation, max int, minOne bool) (Result, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	i, ok := p.coversLocked(o)
	if !ok {
		return Result{}, false
	}
	res := Result{State: p.state}
	j, n := i, 0
	for ; j < len(p.batches); j++ {
		b := &p.batches[j]
		if iso == ReadCommitted && !b.exact(p.state.LastStable) {
			if j == i && b.Transactional {
				return Result{}, false
			}
			break
		}
		if n+b.Size > max && (j > i || !minOne) {
			break
		}
		n += b.Size
	}
	if j == i {
		return res, true
	}
	first, last := &p.batches[i], &p.batches[j-1]
	if &first.buf[0] == &last.buf[0] {
		// One Append's batches, next to each other in its buffer.
		res.Records = first.buf[first.pos : last.pos+last.Size : last.pos+last.Size]
		return res, true
	}
	res.Records = make([]byte, 0, n)
	for k := i; k < j; k++ {
		res.Records = append(res.Records, p.batches[k].bytes()...)
	}
	return res, true
}
