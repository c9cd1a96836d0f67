package storage

import (
	"errors"
	"fmt"
)

// Growing a topic (Kafka's CreatePartitions).
//
// A Topic is read without a lock everywhere: its Partitions slice is
// ranged by retention sweeps, fetches, produces, Metadata and the
// replica fetchers, each holding the *Topic it looked up for as long as it
// likes. So a topic is never changed in place. AddPartitions builds a new
// Topic with the same name, id, config and replication factor, whose
// Partitions are the old slice's *Partition values followed by the new
// ones, and publishes it in the store's maps, under Store.mu, in place of
// the old one. This is race-free for the same reason an immutable image
// is:
//
//   - nothing writes a published Topic, nor its Partitions slice: the new
//     slice is a fresh array, filled before it is published;
//   - a reader that looked the topic up before the swap holds the old
//     Topic, whose partitions are all still live (they are shared), and
//     sees the count it would have seen had it read a moment earlier; its
//     next lookup (the next request, the next sweep, the next fetcher
//     round) sees the new one;
//   - the swap happens under Store.mu, which every lookup takes, so a
//     lookup sees the old Topic or the new one, whole.
//
// A partition's Topic() stays the generation it was opened in: the same
// name, id and replication factor, which growth never changes. What the
// generations share (topicLife) is what must not diverge: the deletion
// flag, the config (which AlterTopicConfig changes for all of them at
// once, configs.go), and the lock that orders the catalog's writes.
//
// # Ordering with the catalog and deletion
//
// A topic's growths and its deletion take its alter lock (topicLife),
// before Store.mu, so that each writes the catalog and publishes its
// result before the next starts: a deletion that comes during a growth
// waits for it, then closes every partition, the new ones too, and a
// growth that comes after a deletion finds the topic gone. The new
// partitions' logs are opened before the catalog records the new count:
// a crash in between leaves partition directories beyond the count,
// which the catalog deletes at the next start (logdir), never a count
// whose logs were never opened. The count is reserved under the store's
// limit (WithMaxPartitions) while the logs open, outside Store.mu, as
// CreateTopicSpec reserves a new topic's, so that lookups go on.

// CheckAddPartitions reports whether topic name may grow to count
// partitions with pending more partitions added first (those of the
// topics before it in one request), as AddPartitions checks: count at
// most MaxPartitions (ErrInvalidPartitions), and the partitions added
// within the store's limit (ErrPartitionLimit). It does not check the
// topic's current count, which the caller knows from the same view it
// decides on; it creates nothing.
func (s *Store) CheckAddPartitions(name string, count int32, pending int) error {
	if count > MaxPartitions {
		return fmt.Errorf("%w: %d, at most %d are allowed", ErrInvalidPartitions, count, MaxPartitions)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	have := 0
	if t, ok := s.byName[name]; ok {
		have = len(t.Partitions)
	}
	return s.checkLimitLocked(name, int32(max(int(count)-have, 0)+pending))
}

// AddPartitions grows topic id to count partitions, the new ones empty,
// and returns the topic as it is now: a new Topic that replaces the one
// the store held (see above). It records the new count in the catalog,
// if there is one, once the new logs are open. It fails with an error
// wrapping ErrUnknownTopic, ErrInvalidPartitions (count not above the
// topic's partitions, or above MaxPartitions), ErrPartitionLimit,
// ErrClosed, or the LogOpener's or the catalog's error, which leave the
// topic as it was. O(count), plus opening the new logs.
func (s *Store) AddPartitions(id TopicID, count int32) (*Topic, error) {
	if count > MaxPartitions {
		return nil, fmt.Errorf("%w: %d, at most %d are allowed", ErrInvalidPartitions, count, MaxPartitions)
	}
	t := s.lockTopic(func() *Topic { return s.byID[id] })
	if t == nil {
		return nil, fmt.Errorf("%w: id %s", ErrUnknownTopic, id)
	}
	defer t.life.alter.Unlock()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	have := int32(len(t.Partitions))
	if count <= have {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s has %d partitions, %d would not be an increase", ErrInvalidPartitions, t.Name, have, count)
	}
	n := count - have
	if err := s.checkLimitLocked(t.Name, n); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.partitions += int(n) // reserved meanwhile
	s.mu.Unlock()

	next, err := s.grow(t, count)

	s.mu.Lock()
	closed := s.closed
	if err == nil && !closed {
		s.byName[next.Name], s.byID[next.ID] = next, next
	} else {
		s.partitions -= int(n)
	}
	s.mu.Unlock()
	if err == nil && closed {
		// Close did not see the new partitions: close them here. The
		// catalog keeps the count, which the metadata log decided; the
		// next start opens them again.
		var errs []error
		for _, p := range next.Partitions[have:] {
			errs = append(errs, p.close(false))
		}
		err = errors.Join(append(errs, ErrClosed)...)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: add partitions to %s: %w", t.Name, err)
	}
	return next, nil
}

// grow returns t's next generation with count partitions: t's, then new
// ones whose logs it opens, and the new count recorded in the catalog.
// If a log or the catalog fails, the new logs are removed again, and
// nothing has changed.
//
// REQUIRES: t.life.alter held.
func (s *Store) grow(t *Topic, count int32) (*Topic, error) {
	next := &Topic{Name: t.Name, ID: t.ID, ReplicationFactor: t.ReplicationFactor,
		Partitions: make([]*Partition, count), life: t.life}
	have := copy(next.Partitions, t.Partitions)
	if opened, err := s.openPartitions(next, have); err != nil {
		errs := []error{err}
		for _, l := range opened {
			errs = append(errs, l.Remove())
		}
		return nil, errors.Join(errs...)
	}
	if c := s.cfg.catalog; c != nil {
		spec := TopicSpec{Name: t.Name, ID: t.ID, Partitions: count, Config: t.Config(), ReplicationFactor: t.ReplicationFactor}
		if err := c.AddTopic(spec); err != nil {
			errs := []error{err}
			for _, p := range next.Partitions[have:] {
				errs = append(errs, p.close(true))
			}
			return nil, errors.Join(errs...)
		}
	}
	return next, nil
}

// lockTopic takes the alter lock of the topic find finds (under s.mu) and
// returns the topic's last generation, which no growth or deletion can
// replace until the caller unlocks t.life.alter. It returns nil, holding
// nothing, if find finds no topic, or, once the lock is taken, not the
// same one (deleted meanwhile, and maybe created again).
func (s *Store) lockTopic(find func() *Topic) *Topic {
	s.mu.RLock()
	t := find()
	s.mu.RUnlock()
	if t == nil {
		return nil
	}
	t.life.alter.Lock() // lock order: a topic's alter, then s.mu
	s.mu.RLock()
	last := find()
	s.mu.RUnlock()
	if last == nil || last.life != t.life {
		t.life.alter.Unlock()
		return nil
	}
	return last
}
