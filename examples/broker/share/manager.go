package share

import (
	"fmt"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// Kafka's defaults for the share partitions' settings.
const (
	DefaultDeliveryLimit = 5    // share.delivery.count.limit
	DefaultMaxLocks      = 2000 // group.share.partition.max.record.locks
)

// Key names a share partition: a share group's state of one partition.
type Key struct {
	Group     string
	Topic     [16]byte // the topic's id
	Partition int32
}

// Config is what a Manager runs with.
type Config struct {
	// Timer holds the acquisition locks; required. The Manager does not
	// close it.
	Timer *timer.Timer
	// Tick is the width of the ticks whose locks of one member share a
	// timer task (group.go): by default the Timer's own (Timer.Tick), the
	// tick each lock's own task would have run on. A lock is never
	// released before its deadline whatever Tick is; a coarser one
	// releases locks up to Tick late, a finer one shares tasks less.
	Tick time.Duration
	// DeliveryLimit is share.delivery.count.limit: a record released after
	// that many deliveries is archived (default 5).
	DeliveryLimit int16
	// MaxLocks is group.share.partition.max.record.locks: the records a
	// partition's window holds at which no acquisition of new records
	// starts (default 2000); one that starts below it may end past it,
	// at the end of a batch (Partition.AcquireAppend), as in Kafka.
	MaxLocks int
	// Wake is called, with no lock held, with the key of a partition whose
	// records became acquirable (nil: nobody waits).
	Wake func(Key)
	// Persister keeps the partitions' state (persist.go); nil keeps it in
	// memory only, each partition ready at once.
	Persister Persister
}

// Manager holds the share partitions of every share group (Kafka's
// SharePartitionManager's cache). Its methods are safe for concurrent use.
type Manager struct {
	cfg Config // immutable

	mu    sync.Mutex // guards the following; before any Partition's mu
	parts map[Key]*Partition
}

// NewManager returns a Manager with cfg's settings, Kafka's defaults for
// those left zero.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.DeliveryLimit == 0 {
		cfg.DeliveryLimit = DefaultDeliveryLimit
	}
	if cfg.MaxLocks == 0 {
		cfg.MaxLocks = DefaultMaxLocks
	}
	if cfg.Timer == nil {
		return nil, fmt.Errorf("%w: no timer", ErrInvalidConfig)
	}
	if cfg.Tick == 0 {
		cfg.Tick = cfg.Timer.Tick()
	}
	switch {
	case cfg.Tick < 0:
		return nil, fmt.Errorf("%w: tick %v", ErrInvalidConfig, cfg.Tick)
	case cfg.DeliveryLimit < 2 || cfg.DeliveryLimit > 10:
		return nil, fmt.Errorf("%w: delivery count limit %d, not in [2, 10]", ErrInvalidConfig, cfg.DeliveryLimit)
	case cfg.MaxLocks < 100 || cfg.MaxLocks > 10000:
		return nil, fmt.Errorf("%w: max record locks %d, not in [100, 10000]", ErrInvalidConfig, cfg.MaxLocks)
	}
	return &Manager{cfg: cfg, parts: make(map[Key]*Partition)}, nil
}

func (m *Manager) wake(k Key) {
	if m.cfg.Wake != nil {
		m.cfg.Wake(k)
	}
}

// Get returns k's partition, or nil before it is initialized.
func (m *Manager) Get(k Key) *Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[k]
}

// GetOrInit is Lead at no leader epoch (-1: the persister checks none).
func (m *Manager) GetOrInit(k Key, start func() int64) *Partition { return m.Lead(k, -1, start) }

// Lead returns k's partition, led here at leaderEpoch, made now if it has
// none yet or had one at another leader epoch (a leadership lost and
// taken again: what it held in memory is dropped). A new partition's
// window starts at start() (share.auto.offset.reset's offset) unless the
// persister has its state: it is not ready until that is read
// (persist.go). start is called with the Manager's lock held: it must not
// call back into the Manager.
func (m *Manager) Lead(k Key, leaderEpoch int32, start func() int64) *Partition {
	m.mu.Lock()
	p := m.parts[k]
	if p != nil && p.leaderEpoch == leaderEpoch {
		m.mu.Unlock()
		return p
	}
	if p != nil {
		p.mu.Lock()
		p.gone = true
		p.skipToLocked(p.end) // settles every lock
		p.mu.Unlock()
	}
	off := start()
	p = &Partition{key: k, m: m, leaderEpoch: leaderEpoch, start: off, end: off, ready: m.cfg.Persister == nil}
	m.parts[k] = p
	m.mu.Unlock()
	if m.cfg.Persister != nil {
		m.load(p, off)
	}
	return p
}

// Set puts k's window at offset, dropping what it had in flight (an
// AlterShareGroupOffsets of a group with no member, whose records none
// holds).
func (m *Manager) Set(k Key, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.parts[k]; old != nil {
		old.mu.Lock()
		old.skipToLocked(old.end) // settles every lock
		old.mu.Unlock()
	}
	m.parts[k] = &Partition{key: k, m: m, leaderEpoch: -1, start: offset, end: offset, ready: true}
}

// Of returns the partitions of group, in no order.
func (m *Manager) Of(group string) []*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Partition
	for k, p := range m.parts {
		if k.Group == group {
			out = append(out, p)
		}
	}
	return out
}

// Delete forgets k's partition, releasing what it held; it reports whether
// there was one.
func (m *Manager) Delete(k Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[k]
	if p == nil {
		return false
	}
	p.mu.Lock()
	p.skipToLocked(p.end)
	p.mu.Unlock()
	delete(m.parts, k)
	return true
}

// Release releases every record member of group holds, in every partition
// (its share session closed, or it left the group).
func (m *Manager) Release(group, member string) {
	for _, p := range m.Of(group) {
		p.Release(member)
	}
}
