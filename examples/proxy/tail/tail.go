package tail

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/proxy/cache"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// TP names a topic partition: the key client fetches wait under.
type TP struct {
	Topic     string
	Partition int32
}

// Tail is one partition tailed from upstream. Its fields are immutable;
// its cache is filled by its fetcher.
type Tail struct {
	TP
	TopicID [16]byte
	Leader  int32 // the upstream broker it is fetched from
	Epoch   int32 // the leader epoch the metadata gave when it started
	Cache   *cache.Partition

	m        *Manager
	lastUsed atomic.Int64 // unix nanoseconds of the last Touch
	appended atomic.Int64 // unix nanoseconds of the last upstream answer with records
	stopped  atomic.Pointer[error]
}

// Appended returns when the last upstream answer that brought records
// arrived (zero before any): where the latency of the client fetches it
// wakes begins.
func (t *Tail) Appended() time.Time {
	if n := t.appended.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Touch marks the tail used by a client fetch now, which keeps it from
// stopping idle. O(1).
func (t *Tail) Touch() { t.lastUsed.Store(t.m.cfg.now().UnixNano()) }

// Err returns why the tail stopped, or nil while it tails.
func (t *Tail) Err() error {
	if p := t.stopped.Load(); p != nil {
		return *p
	}
	return nil
}

// A Start asks for a partition to be tailed from an offset.
type Start struct {
	TP
	Offset int64
	// Leader, when LeaderKnown, is the upstream broker that has just
	// answered a fetch of the partition without error, which makes it the
	// leader: it is used when the metadata does not know the partition yet
	// (a topic created a moment ago).
	Leader      int32
	LeaderKnown bool
}

// Manager runs the tails and their fetchers. See the package
// documentation.
type Manager struct {
	cl      *upstream.Cluster
	cfg     config // immutable
	log     *zap.Logger
	notify  func(TP)
	metrics *metrics
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the fetchers

	mu       sync.Mutex // guards the following
	tails    map[TP]*Tail
	fetchers map[int32]*fetcher // by leader
	closed   bool
}

// New returns a Manager tailing from cl. notify is called, with no lock
// held, after a tail's cache changed or the tail stopped; it must not
// block for long: the fetcher that calls it waits.
func New(cl *upstream.Cluster, notify func(TP), opts ...Option) (*Manager, error) {
	cfg := defaults()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{cl: cl, cfg: cfg, log: cfg.log, notify: notify,
		tails: make(map[TP]*Tail), fetchers: make(map[int32]*fetcher)}
	var err error
	if m.metrics, err = newMetrics(cfg.reg, m); err != nil {
		return nil, err
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Get returns the live tail of tp, or nil.
func (m *Manager) Get(tp TP) *Tail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tails[tp]
}

// Len returns the number of partitions tailed.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tails)
}

// Start tails each partition of starts from its offset, unless it is
// tailed already, and returns the tails in the same order: the live one,
// a new one, or nil for a partition whose leader is unknown (or after
// Close). Partitions of one call join their fetchers together, so
// that a consumer's partitions start in one round.
func (m *Manager) Start(starts []Start) []*Tail {
	out := make([]*Tail, len(starts))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return out
	}
	for i, s := range starts {
		if t := m.tails[s.TP]; t != nil {
			out[i] = t
			continue
		}
		leader, epoch, ok := m.cl.Leader(s.Topic, s.Partition)
		switch {
		case s.LeaderKnown && (!ok || leader != s.Leader):
			leader, epoch = s.Leader, -1
		case !ok:
			continue
		}
		id, _ := m.cl.TopicID(s.Topic)
		t := &Tail{TP: s.TP, TopicID: id, Leader: leader, Epoch: epoch, m: m,
			Cache: cache.NewPartition(s.Offset, m.cfg.cacheBytes)}
		t.Touch()
		if m.fetchers[leader] == nil {
			f, err := m.newFetcherLocked(leader)
			if err != nil {
				m.log.Debug("cannot tail", zap.String("topic", s.Topic), zap.Int32("partition", s.Partition), zap.Error(err))
				continue
			}
			m.fetchers[leader] = f
		}
		m.tails[s.TP] = t
		out[i] = t
		m.metrics.started.Inc()
		m.log.Debug("tailing", zap.String("topic", s.Topic), zap.Int32("partition", s.Partition),
			zap.Int64("offset", s.Offset), zap.Int32("leader", leader), zap.Int32("leader_epoch", epoch))
	}
	return out
}

// stop ends t with err, once: it leaves the manager's tails, and notify
// tells the proxy, whose waiting fetches then read from upstream.
func (m *Manager) stop(t *Tail, err error) {
	m.mu.Lock()
	if m.tails[t.TP] == t {
		delete(m.tails, t.TP)
	}
	m.mu.Unlock()
	if !t.stopped.CompareAndSwap(nil, &err) {
		return
	}
	m.metrics.stopped(err)
	m.log.Debug("tail stopped", zap.String("topic", t.Topic), zap.Int32("partition", t.Partition), zap.Error(err))
	m.notify(t.TP)
}

// Close stops every tail (their waiting fetches are told) and every
// fetcher, and waits for the fetchers' goroutines. Idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	tails := make([]*Tail, 0, len(m.tails))
	for _, t := range m.tails {
		tails = append(tails, t)
	}
	m.mu.Unlock()
	m.cancel()
	for _, t := range tails {
		m.stop(t, ErrClosed)
	}
	m.wg.Wait()
}
