package share

import (
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/timer"
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

// Range is a run of offsets acquired together, each delivered
// DeliveryCount times counting this delivery (ShareFetch's
// AcquiredRecords).
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// record is one offset of the window.
type record struct {
	state      State
	deliveries int16
	lock       *lock // the acquisition holding it, while Acquired
}

// lock is one acquisition's lock: a timer task that releases what the
// acquisition still holds when it expires. first and last bound the
// offsets it acquired; held counts those still acquired under it, and
// the lock is cancelled when that reaches zero.
type lock struct {
	task        timer.Task
	p           *Partition
	member      string
	first, last int64 // immutable
	held        int   // guarded by p.mu
}

// Run expires the lock, on a timer worker.
func (l *lock) Run() { l.p.expire(l) }

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
	// records costs nothing to pass over.
	avail int
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
// logEnd (the log's readable end), within MaxLocks records in flight. The
// records below logStart are gone from the log: they leave the window
// first. The acquisition holds one lock, due after lockFor. It returns the
// acquired offsets in increasing runs of one delivery count; none when
// there is nothing to acquire. O(window).
func (p *Partition) Acquire(member string, max int, logStart, logEnd int64, lockFor time.Duration) []Range {
	if max <= 0 {
		return nil
	}
	p.mu.Lock()
	if !p.ready || p.gone {
		p.mu.Unlock()
		return nil
	}
	p.skipToLocked(logStart)
	l := &lock{p: p, member: member, first: -1}
	var out []Range
	take := func(off int64, r *record) {
		r.state, r.lock = Acquired, l
		r.deliveries++
		if l.first < 0 {
			l.first = off
		}
		l.last = off
		l.held++
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].Last = off
		} else {
			out = append(out, Range{First: off, Last: off, DeliveryCount: r.deliveries})
		}
	}
	for i := 0; i < len(p.recs) && p.avail > 0 && l.held < max; i++ {
		if p.recs[i].state == Available {
			p.avail--
			take(p.start+int64(i), &p.recs[i])
		}
	}
	for l.held < max && p.end < logEnd && p.end-p.start < int64(p.m.cfg.MaxLocks) {
		p.recs = append(p.recs, record{})
		p.end++
		take(p.end-1, &p.recs[len(p.recs)-1])
	}
	if l.held > 0 {
		l.task.Init(l)
		if err := p.m.cfg.Timer.Schedule(&l.task, lockFor); err != nil {
			// The timer is closed: the broker is shutting down, and
			// nothing will be fetched again. Hand nothing out rather
			// than records no lock will ever release.
			_, _ = p.releaseLocked(l, l.member)
			out = nil
		}
	}
	p.mu.Unlock()
	return out
}

// skipToLocked moves the start to logStart when the log no longer holds
// the records before it (retention, DeleteRecords): they are archived,
// whatever their state. REQUIRES: p.mu held.
func (p *Partition) skipToLocked(logStart int64) {
	if logStart <= p.start {
		return
	}
	for off := p.start; off < logStart && off < p.end; off++ {
		p.settleLocked(&p.recs[off-p.start], Archived)
	}
	if logStart >= p.end {
		p.recs, p.end = p.recs[:0], logStart
	} else {
		p.recs = p.recs[logStart-p.start:]
	}
	p.start = logStart
}

// settleLocked ends r's acquisition, if it is acquired, leaving it in st;
// the lock goes when it holds nothing more. REQUIRES: p.mu held.
func (p *Partition) settleLocked(r *record, st State) {
	if r.state == Available {
		p.avail--
	}
	if st == Available {
		p.avail++
	}
	if r.state == Acquired {
		if l := r.lock; l != nil {
			l.held--
			if l.held == 0 {
				p.m.cfg.Timer.Cancel(&l.task) // O(1); false when it is expiring, which then finds nothing held
			}
		}
	}
	r.state, r.lock = st, nil
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
	p.recs = p.recs[n:]
	p.start += int64(n)
	return true
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
	typeOf := func(off int64) AckType {
		if len(types) == 1 {
			return AckType(types[0])
		}
		return AckType(types[off-first])
	}
	p.mu.Lock()
	if !p.ready || p.gone || first < p.start || last >= p.end {
		p.mu.Unlock()
		return ErrInvalidRecordState
	}
	for off := first; off <= last; off++ {
		r := &p.recs[off-p.start]
		if r.state != Acquired || r.lock.member != member {
			p.mu.Unlock()
			return ErrInvalidRecordState
		}
	}
	wake := false
	var renewed *lock
	for off := first; off <= last; off++ {
		r := &p.recs[off-p.start]
		switch typeOf(off) {
		case AckAccept:
			p.settleLocked(r, Acknowledged)
		case AckGap, AckReject:
			p.settleLocked(r, Archived)
		case AckRelease:
			st := p.releasedState(r.deliveries)
			p.settleLocked(r, st)
			wake = wake || st == Available
		case AckRenew:
			if r.lock != renewed {
				renewed = r.lock
				// A lock already expiring is scheduled again, and its second
				// run finds nothing held: the release wins either way.
				_, _ = p.m.cfg.Timer.Reschedule(&renewed.task, lockFor)
			}
		}
	}
	wake = p.advanceLocked() || wake
	p.mu.Unlock()
	if wake {
		p.m.wake(p.key)
	}
	return nil
}

// expire releases what l still holds, on a timer worker, and writes the
// new state (released records are available, or archived at the
// delivery limit) to the persister.
func (p *Partition) expire(l *lock) {
	p.mu.Lock()
	wake, settled := p.releaseLocked(l, l.member)
	p.mu.Unlock()
	if settled > 0 {
		p.Persist(nil)
	}
	if wake {
		p.m.wake(p.key)
	}
}

// releaseLocked releases the records of the window acquired by member,
// those of lock l alone when l is not nil, keeping their delivery counts,
// and reports whether any record became acquirable and how many it
// released. REQUIRES: p.mu held.
func (p *Partition) releaseLocked(l *lock, member string) (bool, int) {
	from, to := p.start, p.end-1
	if l != nil {
		from, to = max(l.first, p.start), min(l.last, p.end-1)
	}
	released, settled := false, 0
	for off := from; off <= to; off++ {
		r := &p.recs[off-p.start]
		if r.state != Acquired || r.lock.member != member || (l != nil && r.lock != l) {
			continue
		}
		st := p.releasedState(r.deliveries)
		p.settleLocked(r, st)
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
	wake, settled := p.releaseLocked(nil, member)
	p.mu.Unlock()
	if settled > 0 {
		p.Persist(nil)
	}
	if wake {
		p.m.wake(p.key)
	}
}
