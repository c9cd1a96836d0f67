package storage

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// A Store holds the broker's topics and their partitions. Its methods are
// safe for concurrent use.
type Store struct {
	cfg config // immutable

	mu     sync.RWMutex // guards the following; see Partition for the lock order
	byName map[string]*Topic
	byID   map[TopicID]*Topic
	closed bool

	stop      chan struct{} // closed by Close: the sweeper returns
	done      chan struct{} // closed by the sweeper when it returns
	closeOnce sync.Once
}

// New returns an empty store and, unless the retention check interval is
// zero, starts the goroutine that applies retention; Close stops it.
func New(opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, byName: make(map[string]*Topic), byID: make(map[TopicID]*Topic),
		stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.checkInterval > 0 {
		go s.sweepEvery(cfg.checkInterval)
	} else {
		close(s.done)
	}
	return s, nil
}

// TopicDefaults returns the configs a topic is created with unless told
// otherwise.
func (s *Store) TopicDefaults() TopicConfig { return s.cfg.defaults }

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
	if _, ok := s.byName[name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	return nil
}

// CreateTopic creates topic name with partitions empty partitions (at
// most MaxPartitions) and the configs cfg (start from TopicDefaults), under
// a new id. It fails with an error wrapping ErrInvalidTopic,
// ErrInvalidPartitions, ErrTopicExists or ErrClosed, or the LogOpener's
// error.
func (s *Store) CreateTopic(name string, partitions int32, cfg TopicConfig) (*Topic, error) {
	if err := s.CheckCreate(name, partitions); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if _, ok := s.byName[name]; ok {
		return nil, fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	t := &Topic{Name: name, ID: newTopicID(), Config: cfg, Partitions: make([]*Partition, partitions)}
	for _, taken := s.byID[t.ID]; taken; _, taken = s.byID[t.ID] {
		t.ID = newTopicID()
	}
	for i := range t.Partitions {
		log, err := s.cfg.open(name, t.ID, int32(i))
		if err == nil {
			t.Partitions[i], err = openPartition(t, int32(i), &s.cfg, log)
		}
		if err != nil {
			for _, p := range t.Partitions[:i] {
				_ = p.close(true)
			}
			return nil, fmt.Errorf("storage: create %s: %w", name, err)
		}
	}
	s.byName[name], s.byID[t.ID] = t, t
	return t, nil
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

// DeleteTopic deletes the topic named name and returns it: its partitions
// fail every later call with ErrDeleted, and their logs are closed. The
// caller then answers the requests waiting on them. It fails with an error
// wrapping ErrUnknownTopic.
func (s *Store) DeleteTopic(name string) (*Topic, error) {
	s.mu.Lock()
	t, ok := s.byName[name]
	if ok {
		s.removeLocked(t)
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return t, t.closePartitions(true)
}

// DeleteTopicByID is DeleteTopic by topic id.
func (s *Store) DeleteTopicByID(id TopicID) (*Topic, error) {
	s.mu.Lock()
	t, ok := s.byID[id]
	if ok {
		s.removeLocked(t)
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: id %s", ErrUnknownTopic, id)
	}
	return t, t.closePartitions(true)
}

// REQUIRES: s.mu held for writing.
func (s *Store) removeLocked(t *Topic) {
	delete(s.byName, t.Name)
	delete(s.byID, t.ID)
	t.deleted.Store(true)
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
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		var errs []error
		for _, t := range s.Topics() {
			errs = append(errs, t.closePartitions(false))
		}
		err = errors.Join(errs...)
	})
	return err
}
