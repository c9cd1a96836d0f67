package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gopurgatory/purgatory/timer"
)

// A Store holds the broker's topics and their partitions. Its methods are
// safe for concurrent use.
type Store struct {
	cfg config // immutable
	// defaults are the configs a topic takes unless it has its own: the
	// cfg's at first, replaced by SetTopicDefaults (the broker's dynamic
	// configs, set by AlterConfigs). Never written once stored.
	defaults atomic.Pointer[TopicConfig]

	mu       sync.RWMutex // guards the following; see Partition for the lock order
	byName   map[string]*Topic
	byID     map[TopicID]*Topic
	creating map[string]TopicID // names reserved by CreateTopic while it opens their logs
	// partitions counts the partitions of the topics in byName, and of
	// those being created: what WithMaxPartitions bounds.
	partitions int
	closed     bool

	stop      chan struct{} // closed by Close: the sweeper returns
	done      chan struct{} // closed by the sweeper when it returns
	closeOnce sync.Once

	// The log cleaner's schedule (cleaning.go), set by New.
	ownTimer *timer.Timer    // the cleaner's timer if the store made it
	cleanRun *timer.Periodic // nil without a schedule
	passing  atomic.Bool     // a pass is running: the next run skips
	passes   sync.WaitGroup  // the pass running
}

// New returns a store holding the topics of its catalog (WithCatalog),
// their logs opened, or an empty one without a catalog, and, unless the
// retention check interval is zero, starts the goroutine that applies
// retention; Close stops it. A topic whose logs fail to open fails New.
func New(opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.inflating = make(chan struct{}, runtime.GOMAXPROCS(0))
	s := &Store{cfg: cfg, byName: make(map[string]*Topic), byID: make(map[TopicID]*Topic),
		creating: make(map[string]TopicID), stop: make(chan struct{}), done: make(chan struct{})}
	s.defaults.Store(&cfg.defaults)
	if cfg.catalog != nil {
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	if err := s.startCleaner(); err != nil {
		_ = s.closeLogs()
		return nil, err
	}
	if cfg.checkInterval > 0 {
		go s.sweepEvery(cfg.checkInterval)
	} else {
		close(s.done)
	}
	return s, nil
}

// TopicDefaults returns the configs a topic is created with unless told
// otherwise: WithTopicDefaults', or the last SetTopicDefaults gave. O(1),
// without a lock.
func (s *Store) TopicDefaults() TopicConfig { return *s.defaults.Load() }

// SetTopicDefaults makes c the configs a topic takes unless it has its
// own (a min.insync.replicas of zero is 1, as WithTopicDefaults makes it):
// the broker's dynamic configs changed (Kafka's DynamicLogConfig). It
// changes no existing topic: whoever resolves a topic's config from its
// own configs (package replica) applies the new defaults to each with
// AlterTopicConfig. A durable log's segments keep rolling at the static
// default's size unless a topic's config differs from it
// (setRollLocked), so that a new log.segment.bytes reaches the logs
// through their topics' configs. The caller validates c. O(1).
func (s *Store) SetTopicDefaults(c TopicConfig) {
	c.MinInsyncReplicas = c.MinISR()
	s.defaults.Store(&c)
}

// MaxPartitions bounds a topic's partitions. Kafka sets no such bound, but
// here every partition lives in memory from its creation, and one request
// must not be able to ask for two billion of them.
const MaxPartitions = 1 << 16

// CheckCreate reports whether CreateTopic would accept name and partitions
// now: it fails as CreateTopic does, without creating anything (a
// validate-only CreateTopics).
func (s *Store) CheckCreate(name string, partitions int32) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if partitions < 1 || partitions > MaxPartitions {
		return fmt.Errorf("%w: %d, between 1 and %d are allowed", ErrInvalidPartitions, partitions, MaxPartitions)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.takenLocked(name) {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	return s.checkLimitLocked(name, partitions)
}

// checkLimitLocked reports whether n more partitions, topic name's, fit
// under the store's limit, less what is reserved for other topics that do
// not exist yet (WithReservedPartitions; a reservation larger than the
// limit is not kept).
//
// REQUIRES: s.mu held.
func (s *Store) checkLimitLocked(name string, n int32) error {
	max := s.cfg.maxPartitions
	if max <= 0 {
		return nil
	}
	reserved := 0
	for r, rn := range s.cfg.reserved {
		// A reservation the bound cannot hold would refuse every topic
		// for a topic that cannot be created anyway: it is not kept.
		if r != name && rn <= max && !s.takenLocked(r) {
			reserved += rn
		}
	}
	if s.partitions+int(n) > max-reserved {
		return fmt.Errorf("%w: %d more partitions would make %d, and this broker holds at most %d (max.broker.partitions), %d of them kept for internal topics",
			ErrPartitionLimit, n, s.partitions+int(n), max, reserved)
	}
	return nil
}

// CreateTopic creates topic name with partitions empty partitions and the
// configs cfg (start from TopicDefaults), under a new id, with one replica:
// CreateTopicSpec with a zero id and a replication factor of 1.
func (s *Store) CreateTopic(name string, partitions int32, cfg TopicConfig) (*Topic, error) {
	return s.CreateTopicSpec(TopicSpec{Name: name, Partitions: partitions, Config: cfg, ReplicationFactor: 1})
}

// CreateTopicSpec creates the topic spec describes, with spec.Partitions
// empty partitions (at most MaxPartitions), its configs and its
// replication factor (0 is 1), under spec.ID, or under a new id if that is
// zero: a broker applying its cluster's metadata log must use the ids the
// log holds. It records the topic in the catalog first, if there is
// one. It fails with an error wrapping ErrInvalidTopic,
// ErrInvalidPartitions, ErrInvalidReplicationFactor (a negative one),
// ErrTopicExists (the name or the id is taken) or ErrClosed, or the
// catalog's or the LogOpener's error. The name and the id are reserved
// while the logs are opened, outside the store's lock, so that lookups go
// on meanwhile.
func (s *Store) CreateTopicSpec(spec TopicSpec) (*Topic, error) {
	if err := s.CheckCreate(spec.Name, spec.Partitions); err != nil {
		return nil, err
	}
	if spec.ReplicationFactor < 0 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidReplicationFactor, spec.ReplicationFactor)
	}
	spec = spec.normalized()
	name := spec.Name
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.takenLocked(name) {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if err := s.checkLimitLocked(name, spec.Partitions); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if spec.ID.IsZero() {
		spec.ID = newTopicID()
		for s.idTakenLocked(spec.ID) {
			spec.ID = newTopicID()
		}
	} else if s.idTakenLocked(spec.ID) {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: id %s is another topic's", ErrTopicExists, name, spec.ID)
	}
	s.creating[name] = spec.ID
	s.partitions += int(spec.Partitions) // reserved meanwhile
	s.mu.Unlock()

	t, err := s.create(spec)

	s.mu.Lock()
	delete(s.creating, name)
	closed := s.closed
	if err == nil && !closed {
		s.byName[name], s.byID[t.ID] = t, t
	} else {
		s.partitions -= int(spec.Partitions)
	}
	s.mu.Unlock()
	if err == nil && closed {
		// Close did not see it: undo it, as a creation that failed,
		// the catalog first.
		err = errors.Join(ErrClosed, s.forget(spec), t.closePartitions(true))
	}
	if err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", name, err)
	}
	return t, nil
}

// create records spec in the catalog and opens its logs. If they fail, it
// undoes it in the order DeleteTopic does, the catalog first, then the
// logs opened, so that a crash in between leaves logs no topic names.
func (s *Store) create(spec TopicSpec) (*Topic, error) {
	if c := s.cfg.catalog; c != nil {
		if err := c.AddTopic(spec); err != nil {
			return nil, err
		}
	}
	t, opened, err := s.openTopic(spec)
	if err != nil {
		errs := []error{err, s.forget(spec)}
		for _, l := range opened {
			errs = append(errs, l.Remove())
		}
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// forget removes spec from the catalog, if there is one.
func (s *Store) forget(spec TopicSpec) error {
	if c := s.cfg.catalog; c != nil {
		return c.RemoveTopic(spec.Name, spec.ID)
	}
	return nil
}

// takenLocked reports whether name is a topic's or being created.
//
// REQUIRES: s.mu held.
func (s *Store) takenLocked(name string) bool {
	_, ok := s.byName[name]
	_, creating := s.creating[name]
	return ok || creating
}

// idTakenLocked reports whether id is a topic's or being created.
//
// REQUIRES: s.mu held.
func (s *Store) idTakenLocked(id TopicID) bool {
	if _, ok := s.byID[id]; ok {
		return true
	}
	for _, c := range s.creating {
		if c == id {
			return true
		}
	}
	return false
}

// Topic returns the topic named name, or an error wrapping ErrUnknownTopic.
func (s *Store) Topic(name string) (*Topic, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t, ok := s.byName[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
}

// TopicByID returns the topic with id, or an error wrapping ErrUnknownTopic.
func (s *Store) TopicByID(id TopicID) (*Topic, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t, ok := s.byID[id]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: id %s", ErrUnknownTopic, id)
}

// Partition returns partition p of topic, or an error wrapping
// ErrUnknownTopic or ErrUnknownPartition.
func (s *Store) Partition(topic string, p int32) (*Partition, error) {
	t, err := s.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.Partition(p)
}

// Topics returns every topic, by name. O(topics log topics).
func (s *Store) Topics() []*Topic {
	s.mu.RLock()
	ts := make([]*Topic, 0, len(s.byName))
	for _, t := range s.byName {
		ts = append(ts, t)
	}
	s.mu.RUnlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// DeleteTopic deletes the topic named name and returns it: it is removed
// from the catalog first, if there is one, then its partitions fail every
// later call with ErrDeleted, and their logs are removed. The caller then
// answers the requests waiting on them. It fails with an error wrapping
// ErrUnknownTopic, or the catalog's error (and the topic stays).
func (s *Store) DeleteTopic(name string) (*Topic, error) {
	return s.deleteTopic(func() *Topic { return s.byName[name] }, name)
}

// DeleteTopicByID is DeleteTopic by topic id.
func (s *Store) DeleteTopicByID(id TopicID) (*Topic, error) {
	return s.deleteTopic(func() *Topic { return s.byID[id] }, "id "+id.String())
}

// deleteTopic deletes the topic find finds under s.mu. The catalog is
// written without the lock; a concurrent deletion of the same topic makes
// one of them fail with ErrUnknownTopic. It holds the topic's alter lock
// throughout, so that a growth in flight ends first and the generation
// it finds then is the last: its partitions are all closed.
func (s *Store) deleteTopic(find func() *Topic, what string) (*Topic, error) {
	t := s.lockTopic(find)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, what)
	}
	defer t.life.alter.Unlock()
	if err := s.forget(TopicSpec{Name: t.Name, ID: t.ID}); err != nil {
		return nil, fmt.Errorf("storage: delete %s: %w", t.Name, err)
	}
	s.mu.Lock()
	mine := find() == t
	if mine {
		s.removeLocked(t)
	}
	s.mu.Unlock()
	if !mine {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, what)
	}
	return t, t.closePartitions(true)
}

// REQUIRES: s.mu held for writing.
func (s *Store) removeLocked(t *Topic) {
	s.partitions -= len(t.Partitions)
	delete(s.byName, t.Name)
	delete(s.byID, t.ID)
	t.life.deleted.Store(true)
}

// closePartitions closes the topic's partitions, removing their logs'
// batches with remove (see Partition.close).
func (t *Topic) closePartitions(remove bool) error {
	var errs []error
	for _, p := range t.Partitions {
		errs = append(errs, p.close(remove))
	}
	return errors.Join(errs...)
}

// Close stops the retention goroutine and waits for it, then closes every
// partition's log; the store refuses new topics afterwards, and partitions
// fail with ErrDeleted. Call it once nothing reads the store any more.
// Close is idempotent.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.stopCleaner()
		err = s.closeLogs()
	})
	return err
}

// closeLogs marks the store closed and closes every partition's log.
func (s *Store) closeLogs() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for _, t := range s.Topics() {
		errs = append(errs, t.closePartitions(false))
	}
	return errors.Join(errs...)
}
