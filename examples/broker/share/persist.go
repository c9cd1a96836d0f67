package share

// A share partition's state, kept by a persister (Kafka's Persister: the
// share coordinator, package sharestate, through its RPCs).
//
// # Reading it
//
// A partition made on its leader (Manager.Lead) is not ready: it reads its
// state from the persister, naming the leader epoch it is led at, which
// fences the writes of the partition's earlier leaders. A state never
// initialized (start offset -1) is initialized, at state epoch 0, at the
// offset share.auto.offset.reset gave when the partition was made (the
// high watermark then, for "latest"), and the window starts there, empty.
// Otherwise the window is the state's: its start offset, and its records
// in their states with their delivery counts; a record ACQUIRED when the
// last leader wrote it was held by a consumer of that leader, whose locks
// are gone, and comes back AVAILABLE with its delivery count, as in
// Kafka. Meanwhile nothing is acquired or acknowledged (Acquirable is
// false, Acquire hands nothing out); once ready, the partition's waiting
// share fetches are woken. A read that fails drops the partition: the
// next share fetch makes it again, and reads again.
//
// # Writing it
//
// What a member acknowledges (Acknowledge), a lock that expires and a
// member's release change the state; Persist writes it, the window whole
// (its start offset and its records in runs of one state and delivery
// count), and calls back once it is durable: ShareAcknowledge is answered
// then. Acquiring writes nothing, as in Kafka: a leader that fails loses
// the delivery counts of the acquisitions since its last write.
//
// Writes of one partition go one at a time, each the state as it is when
// it starts: a write asked for while one is under way waits for it, and
// the changes of all that waited go in the next one (the callbacks of
// those that asked are called when it is durable). The persister thus
// never sees an older state after a newer one, whichever goroutine or
// connection carries the writes, and a burst of acknowledgements costs
// two writes. A write fenced (a newer leader read the state: ErrFenced)
// drops the partition.

import (
	"errors"
	"sync/atomic"
)

// Persister keeps share partitions' state durably: in the broker, the
// share coordinator on __share_group_state, reached locally or through
// its RPCs. Each method calls done exactly once, from any goroutine
// (before it returns too), and must not block; errors wrapping ErrFenced
// mean a newer leader (or state epoch) took the state.
type Persister interface {
	// Read returns k's state through done, leaderEpoch stored as its
	// leader epoch (ReadShareGroupState): StartOffset -1 when it was
	// never initialized.
	Read(k Key, leaderEpoch int32, done func(Snapshot, error))
	// Initialize sets k's start offset at stateEpoch, with no record in
	// flight (InitializeShareGroupState).
	Initialize(k Key, stateEpoch int32, start int64, done func(error))
	// Write replaces k's state (WriteShareGroupState), done once it is
	// durable.
	Write(k Key, leaderEpoch int32, s Snapshot, done func(error))
}

// Snapshot is a share partition's persisted state: its state epoch, start
// offset (-1 when never initialized) and the window's records in runs.
type Snapshot struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []Batch
}

// Batch is a run of offsets in one state with one delivery count.
type Batch struct {
	First, Last   int64
	State         State
	DeliveryCount int16
}

// writes is a partition's writes to the persister. REQUIRES: p.mu held
// for every field but flags.
type writes struct {
	stateEpoch int32
	waiters    []func(error) // answered by the next write
	// flags holds writeBusy and writeDirty. It is atomic so that a
	// Persist with nothing to wait for, while a write is under way, only
	// marks the state dirty, without p.mu: a broker persists after every
	// acknowledgement, and almost always finds a write under way.
	flags atomic.Uint32
}

// The bits of writes.flags.
const (
	writeBusy  = 1 << iota // a write is under way
	writeDirty             // the state changed since the last write began
)

// load reads k's state into p, initializing it at start if it has none,
// and makes p ready, or drops it.
func (m *Manager) load(p *Partition, start int64) {
	m.cfg.Persister.Read(p.key, p.leaderEpoch, func(s Snapshot, err error) {
		switch {
		case err != nil:
			m.drop(p, err)
		case s.StartOffset < 0:
			m.cfg.Persister.Initialize(p.key, 0, start, func(err error) {
				if err != nil {
					m.drop(p, err)
					return
				}
				p.restore(Snapshot{StartOffset: start})
			})
		default:
			p.restore(s)
		}
	})
}

// restore makes s p's window, and p ready. O(window).
func (p *Partition) restore(s Snapshot) {
	p.mu.Lock()
	if p.gone {
		p.mu.Unlock()
		return
	}
	p.w.stateEpoch = s.StateEpoch
	p.start, p.end, p.recs, p.avail, p.availFrom = s.StartOffset, s.StartOffset, nil, 0, s.StartOffset
	for _, b := range s.Batches {
		if b.Last < p.end || b.First > b.Last {
			continue // before the start, or a run out of order: nothing to place
		}
		for off := max(b.First, p.end); off <= b.Last && off-p.start < maxWindow; off++ {
			for p.end < off { // an offset no run names was never delivered
				p.recs = append(p.recs, record{})
				p.avail++
				p.end++
			}
			r := record{state: b.State, deliveries: b.DeliveryCount}
			if r.state == Acquired || r.state == Available {
				// Its holder's lock went with the last leader.
				r.state = Available
				p.avail++
			}
			p.recs = append(p.recs, r)
			p.end++
		}
	}
	p.advanceLocked()
	p.ready = true
	p.mu.Unlock()
	p.m.wake(p.key)
}

// drop forgets p, whose state could not be read or whose writes were
// fenced (err), releasing what it held: the next use makes it again.
func (m *Manager) drop(p *Partition, err error) {
	m.mu.Lock()
	if m.parts[p.key] == p {
		delete(m.parts, p.key)
	}
	m.mu.Unlock()
	p.mu.Lock()
	p.gone = true
	p.skipToLocked(p.end) // settles every lock
	waiters := p.w.waiters
	p.w.waiters = nil
	p.mu.Unlock()
	for _, done := range waiters {
		done(err)
	}
	m.wake(p.key) // its waiting fetches find it gone, and are answered
}

// Persist writes the partition's state to the persister and calls done
// (if not nil) once a write that holds every change made before Persist
// was called is durable, or with why not. Without a persister, or before
// the partition is ready, done is called at once with nil: there is
// nothing to write. It never blocks.
func (p *Partition) Persist(done func(error)) {
	if p.m.cfg.Persister == nil {
		if done != nil {
			done(nil)
		}
		return
	}
	// A write under way goes on while the state is dirty (writeNext), and
	// clears writeBusy only by a compare-and-swap from a clean state: the
	// change made before this call is either seen dirty by it, or finds
	// it ended and starts a write below. Busy implies ready; a partition
	// gone ends its writes and drops the mark.
	if done == nil && p.w.flags.Or(writeDirty)&writeBusy != 0 {
		return
	}
	p.mu.Lock()
	if !p.ready || p.gone {
		p.mu.Unlock()
		if done != nil {
			done(nil)
		}
		return
	}
	if done != nil {
		p.w.waiters = append(p.w.waiters, done)
	}
	if p.w.flags.Or(writeBusy|writeDirty)&writeBusy != 0 {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.writeNext()
}

// writeNext writes the state if it changed since the last write began,
// and goes on once that write is done; it ends the writes when nothing
// changed.
func (p *Partition) writeNext() {
	p.mu.Lock()
	for {
		f := p.w.flags.Load()
		if p.gone {
			p.w.flags.Store(0)
			p.mu.Unlock()
			return
		}
		if f&writeDirty != 0 {
			break
		}
		// Clean: the writes end, unless a Persist marked the state
		// dirty since the Load, which its write must hold.
		if p.w.flags.CompareAndSwap(f, 0) {
			p.mu.Unlock()
			return
		}
	}
	p.w.flags.And(^uint32(writeDirty)) // before the snapshot: a later change marks it again
	s := p.snapshotLocked()
	waiters := p.w.waiters
	p.w.waiters = nil
	p.mu.Unlock()
	p.m.cfg.Persister.Write(p.key, p.leaderEpoch, s, func(err error) {
		if errors.Is(err, ErrFenced) {
			p.m.drop(p, err)
		}
		for _, done := range waiters {
			done(err)
		}
		p.writeNext()
	})
}

// snapshotLocked returns the window as the persister keeps it.
// REQUIRES: p.mu held.
func (p *Partition) snapshotLocked() Snapshot {
	s := Snapshot{StateEpoch: p.w.stateEpoch, StartOffset: p.start}
	for i, r := range p.recs {
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 && s.Batches[n-1].State == r.state && s.Batches[n-1].DeliveryCount == r.deliveries {
			s.Batches[n-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, Batch{First: off, Last: off, State: r.state, DeliveryCount: r.deliveries})
	}
	return s
}
