package share

import (
	"math"
	"sync"
	"time"
)

// State is a record's state in a share partition's window.
type State int8

// The states of KIP-932, with Kafka's numbering.
const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

// AckType is how a member acknowledges a record, as ShareAcknowledge and
// ShareFetch carry it.
type AckType int8

// The acknowledgement types of KIP-932 and KIP-1222. A gap names an offset
// the member never saw a record for (a compacted or control record): it is
// archived.
const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// AcquireMode is how a share fetch's max_records bounds what it acquires
// (KIP-1206's ShareAcquireMode, with Kafka's numbering).
type AcquireMode int8

// The acquire modes of KIP-1206.
const (
	// BatchOptimized makes max a soft limit for new records: they are
	// acquired to the end of the log batch that holds the last one max
	// allows, so that a batch is handed out once (ShareFetch v1's only
	// mode, v2's default).
	BatchOptimized AcquireMode = 0
	// RecordLimit makes max a hard limit: at most max records are
	// acquired, a batch cut where they end, its rest left for the next
	// acquisition (kgo's ShareMaxRecordsStrict, the Java consumer's
	// share.acquire.mode=record_limit).
	RecordLimit AcquireMode = 1
)

// Valid reports whether m is a mode of KIP-1206.
func (m AcquireMode) Valid() bool { return m == BatchOptimized || m == RecordLimit }

// Range is a run of offsets acquired together, each delivered
// DeliveryCount times counting this delivery (ShareFetch's
// AcquiredRecords).
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// record is one offset of the window: 8 bytes, no pointer, so that the
// collector never scans the window.
type record struct {
	state      State
	deliveries int16
	// group is the index of its lock's group (group.go), while Acquired.
	group int32
}

// maxWindow bounds a window that batches rounded up past MaxLocks, and so
// what a group's expiry scans (group.go, in proportion to the span of
// offsets it covers). Kafka has no such bound; a batch of more records
// than that (tiny records in a batch of 1 MB) is split.
const maxWindow = math.MaxInt16

// Partition is one share group's state of one partition: the window of
// records in flight, from the share-partition start offset (Start) to its
// end (End). Its methods are safe for concurrent use.
type Partition struct {
	key Key      // immutable
	m   *Manager // immutable
	// leaderEpoch is the partition's leader epoch this broker leads it
	// at, which its writes to the persister carry; immutable.
	leaderEpoch int32

	mu    sync.Mutex // guards the following
	start int64      // SPSO
	end   int64      // SPEO; recs[i] is offset start+i, len(recs) == end-start
	recs  []record
	// avail counts the Available records of recs, so that an acquisition
	// looks for them only when there are some: a window of acquired
	// records costs nothing to pass over. No record below availFrom is
	// Available: an acquisition looks from there, not from the start.
	avail     int
	availFrom int64
	groups    groups  // the locks and their timer tasks (group.go)
	holders   holders // the members holding records (lock.go)
	// ready is set once the state is read from the persister (at once
	// without one): until then nothing is acquired or acknowledged.
	// gone is set when the partition is dropped (its load failed, or its
	// writes were fenced): a new one takes its place on the next use.
	ready, gone bool
	w           writes // persist.go
}

// Key returns the partition's group, topic and partition.
func (p *Partition) Key() Key { return p.key }

// Start returns the share-partition start offset: every record below it
// is acknowledged or archived.
func (p *Partition) Start() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}

// End returns the share-partition end offset: no record from it on was
// ever acquired.
func (p *Partition) End() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.end
}

// StateOf returns offset's state and delivery count; an offset below the
// start is reported Archived (done with), one from the end on Available
// never delivered.
func (p *Partition) StateOf(offset int64) (State, int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case offset < p.start:
		return Archived, 0
	case offset >= p.end:
		return Available, 0
	}
	r := p.recs[offset-p.start]
	return r.state, r.deliveries
}

// Acquirable reports whether Acquire would hand out a record with the
// log's readable end at logEnd: a record made available again, or a new
// one within the window's bound. It is what a waiting share fetch tries.
func (p *Partition) Acquirable(logEnd int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ready || p.gone {
		return false
	}
	if p.end < logEnd && p.end-p.start < int64(p.m.cfg.MaxLocks) {
		return true
	}
	return p.avail > 0
}

// Acquire acquires for member up to max records: first those of the window
// made available again, in offset order, then new ones from the end up to
// logEnd (the log's readable end), within MaxLocks records in flight
// (exactly: Acquire knows no batches). The
// records below logStart are gone from the log: they leave the window
// first. The acquisition holds one lock, due after lockFor (group.go).
// It returns the acquired offsets in increasing runs of one delivery
// count; none when there is nothing to acquire. O(records acquired), plus
// the records passed over looking for those made available again.
func (p *Partition) Acquire(member string, max int, logStart, logEnd int64, lockFor time.Duration) []Range {
	return p.AcquireAppend(nil, member, max, RecordLimit, logStart, logEnd, lockFor, nil)
}

// AcquireAppend is Acquire appending the runs to dst, which it returns:
// with a dst of room enough, acquiring allocates nothing. In RecordLimit
// mode it acquires as Acquire does, max exactly, whatever the batches.
// In BatchOptimized mode with batchEnd (the last offset of the log's
// batch that holds an offset, false where none), max is a soft limit for
// new records, as in Kafka's SharePartition: they are acquired to the end of the batch that holds
// the last one max allows (within logEnd), so that a batch is handed out
// once rather than once per max records of it. MaxLocks bounds where an
// acquisition of new records starts, as Kafka's does: the last one max
// and the records in flight allow is below start+MaxLocks, and its batch
// is taken whole even past it (Kafka's lastOffsetAndMaxRecordsToAcquire),
// up to maxWindow. A batch cut at the bound would be read and sent again
// for its rest, and a producer's batch of thousands of records split
// among the members that share the partition, each answer carrying the
// whole batch for a part of it.
// batchEnd is called with p's lock held.
func (p *Partition) AcquireAppend(dst []Range, member string, max int, mode AcquireMode, logStart, logEnd int64,
	lockFor time.Duration, batchEnd func(offset int64) (int64, bool)) []Range {
	if max <= 0 {
		return dst
	}
	if mode == RecordLimit {
		batchEnd = nil // no rounding up: max and MaxLocks bound new records exactly
	}
	p.mu.Lock()
	if !p.ready || p.gone {
		p.mu.Unlock()
		return dst
	}
	p.skipToLocked(logStart)
	m := p.holders.ref(member) // held while records are taken; a group takes its own
	out, n, first, last := dst, 0, int64(-1), int64(-1)
	take := func(off int64, r *record) {
		out = p.takeLocked(out, off, r)
		n++
		if first < 0 {
			first = off
		}
		last = off
	}
	if p.avail > 0 {
		i := max64(p.availFrom, p.start) - p.start
		for ; i < int64(len(p.recs)) && p.avail > 0 && n < max; i++ {
			if r := &p.recs[i]; r.state == Available {
				p.avail--
				take(p.start+i, r)
			}
		}
		p.availFrom = p.start + i
	}
	stop := logEnd                             // new records end before it
	bound := p.start + int64(p.m.cfg.MaxLocks) // nor go past it, unless rounded up to a batch's end
	want := min(int64(max)-int64(n), bound-p.end)
	if want > 0 && p.end < logEnd && batchEnd != nil {
		if end, ok := batchEnd(p.end + want - 1); ok {
			stop = min(stop, end+1, p.start+maxWindow)
			bound = stop
			max = math.MaxInt // the batch's end bounds them now
		}
	}
	for n < max && p.end < stop && p.end < bound {
		p.recs = append(p.recs, record{})
		p.end++
		take(p.end-1, &p.recs[len(p.recs)-1])
	}
	if n > 0 {
		// The deadline is read once the records are taken, as a
		// Schedule after taking them read it.
		g, err := p.groupLocked(m, p.deadlineLocked(lockFor)) // group.go
		for off := first; off <= last; off++ {
			r := &p.recs[off-p.start]
			if r.state != Acquired || r.group != noGroup {
				continue // passed over: not taken now
			}
			if err == nil {
				g.joinLocked(off, r)
				continue
			}
			// The timer is closed: the broker is shutting down, and
			// nothing will be fetched again. Hand nothing out rather
			// than records no lock will ever release.
			p.settleLocked(off, r, p.releasedState(r.deliveries))
		}
		if err != nil {
			p.advanceLocked()
			out = dst
		}
	}
	p.holders.unref(m)
	p.mu.Unlock()
	return out
}

// takeLocked acquires r, at off, in no group yet, and appends it to out's
// runs. REQUIRES: p.mu held.
func (p *Partition) takeLocked(out []Range, off int64, r *record) []Range {
	r.state, r.group = Acquired, noGroup
	r.deliveries++
	if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.deliveries {
		out[n-1].Last = off
	} else {
		out = append(out, Range{First: off, Last: off, DeliveryCount: r.deliveries})
	}
	return out
}

// max64 is the builtin max, which AcquireAppend's parameter hides.
func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// skipToLocked moves the start to logStart when the log no longer holds
// the records before it (retention, DeleteRecords): they are archived,
// whatever their state. REQUIRES: p.mu held.
func (p *Partition) skipToLocked(logStart int64) {
	if logStart <= p.start {
		return
	}
	for off := p.start; off < logStart && off < p.end; off++ {
		p.settleLocked(off, &p.recs[off-p.start], Archived)
	}
	if logStart >= p.end {
		p.recs, p.end = p.recs[:0], logStart
	} else {
		p.recs = p.recs[logStart-p.start:]
	}
	p.start = logStart
}

// settleLocked ends r's acquisition, if it is acquired, leaving it (at
// off) in st; the lock goes when it holds nothing more. O(1).
// REQUIRES: p.mu held.
func (p *Partition) settleLocked(off int64, r *record, st State) {
	if r.state == Available {
		p.avail--
	}
	if st == Available {
		p.avail++
		p.availFrom = min(p.availFrom, off)
	}
	if r.state == Acquired && r.group != noGroup {
		p.leaveLocked(r) // group.go
	}
	r.state = st
}

// releasedState is the state a released record with deliveries takes:
// available again, or archived once its deliveries reached the limit.
func (p *Partition) releasedState(deliveries int16) State {
	if deliveries >= p.m.cfg.DeliveryLimit {
		return Archived
	}
	return Available
}

// advanceLocked moves the start past the acknowledged and archived records
// at the head of the window. REQUIRES: p.mu held.
func (p *Partition) advanceLocked() bool {
	n := 0
	for n < len(p.recs) && (p.recs[n].state == Acknowledged || p.recs[n].state == Archived) {
		n++
	}
	if n == 0 {
		return false
	}
	if n == len(p.recs) {
		// An empty window starts again at the front of its array: a
		// window acknowledged as fast as it is acquired never grows it.
		p.recs = p.recs[:0]
	} else {
		p.recs = p.recs[n:]
	}
	p.start += int64(n)
	return true
}

// heldByLocked reports whether member (its entry in p.holders) holds r.
// REQUIRES: p.mu held.
func (p *Partition) heldByLocked(r *record, member int32) bool {
	return r.state == Acquired && r.group != noGroup && p.groups.at(r.group).member == member
}

// Acknowledge applies one acknowledgement batch of member to the offsets
// first to last: types holds one type for them all, or one per offset.
// Every offset must be acquired by member, or nothing is applied
// (ErrInvalidRecordState). A renewal restarts the locks of the offsets it
// names for lockFor. Records made available, or a start that moved, wake
// the partition's waiting fetches. O(last-first).
func (p *Partition) Acknowledge(member string, first, last int64, types []int8, lockFor time.Duration) error {
	if first > last || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return ErrInvalidAcknowledgement
	}
	for _, t := range types {
		if t < int8(AckGap) || t > int8(AckRenew) {
			return ErrInvalidAcknowledgement
		}
	}
	p.mu.Lock()
	if !p.ready || p.gone || first < p.start || last >= p.end {
		p.mu.Unlock()
		return ErrInvalidRecordState
	}
	recs, m := p.recs[first-p.start:last-p.start+1], p.holders.find(member)
	for i := range recs {
		if !p.heldByLocked(&recs[i], m) {
			p.mu.Unlock()
			return ErrInvalidRecordState
		}
	}
	wake := false
	due := time.Duration(-1) // a renewal's deadline, read at the first
	for i := range recs {
		r, t := &recs[i], AckType(types[0])
		if len(types) > 1 {
			t = AckType(types[i])
		}
		switch t {
		case AckAccept:
			p.settleLocked(first+int64(i), r, Acknowledged)
		case AckGap, AckReject:
			p.settleLocked(first+int64(i), r, Archived)
		case AckRelease:
			st := p.releasedState(r.deliveries)
			p.settleLocked(first+int64(i), r, st)
			wake = wake || st == Available
		case AckRenew:
			if due < 0 {
				due = p.deadlineLocked(lockFor)
			}
			p.renewLocked(first+int64(i), r, m, due) // group.go
		}
	}
	wake = p.advanceLocked() || wake
	p.mu.Unlock()
	if wake {
		p.m.wake(p.key)
	}
	return nil
}

// releaseLocked releases the records of the window held by member (its
// entry in p.holders), keeping their delivery counts, and reports whether
// any record became acquirable and how many it released. O(window).
// REQUIRES: p.mu held.
func (p *Partition) releaseLocked(member int32) (bool, int) {
	released, settled := false, 0
	for i := range p.recs {
		r := &p.recs[i]
		if !p.heldByLocked(r, member) {
			continue
		}
		st := p.releasedState(r.deliveries)
		p.settleLocked(p.start+int64(i), r, st)
		released = released || st == Available
		settled++
	}
	return p.advanceLocked() || released, settled
}

// Release releases every record member holds in the partition, as when its
// share session closes or it leaves the group, and writes the new state to
// the persister (without waiting for it). O(window).
func (p *Partition) Release(member string) {
	p.mu.Lock()
	wake, settled := false, 0
	if m := p.holders.find(member); m >= 0 {
		wake, settled = p.releaseLocked(m)
	}
	p.mu.Unlock()
	if settled > 0 {
		p.Persist(nil)
	}
	if wake {
		p.m.wake(p.key)
	}
}
