package storage

import "fmt"

// Changing a topic's config (Kafka's AlterConfigs and
// IncrementalAlterConfigs), live.
//
// A topic's config is read on hot paths without a lock: every append
// (max.message.bytes), every retention sweep (retention.ms,
// retention.bytes), every acks=all produce (min.insync.replicas), the
// coordinators' appends and compaction. Each reads it through its
// partition's Topic(), which is the generation the partition was opened
// in, not necessarily the last one (grow.go). So the config does not
// live in a Topic: it lives in the topicLife every generation shares,
// behind an atomic.Pointer[TopicConfig], and Topic.Config loads it. This
// is race-free, and a change reaches every partition at once, because:
//
//   - a TopicConfig is never written once its pointer is stored: a change
//     stores a pointer to a new value, so a reader that loaded the old
//     one keeps a whole, consistent config (it never sees max.message.bytes
//     of one and retention.ms of the other);
//   - every generation and every partition reads the same pointer, so
//     none can lag behind another: the next Config after the Store is
//     the new one, whichever generation a reader holds;
//   - the Store and the Load are atomic, so the race detector, and the
//     memory model, see a happens-before edge from the writer to a
//     reader that loads the new value.
//
// A reader that needs two fields to agree loads the config once (the
// append and the sweep do). What was decided under the old config stays
// decided: a batch appended, a segment kept; the next append or sweep
// applies the new one.
//
// # Ordering with the catalog, growth and deletion
//
// AlterTopicConfig takes the topic's alter lock, as a growth and a
// deletion do, so that the three are ordered: it records the new config
// in the catalog (with the count of the last generation, which no growth
// can change meanwhile), then stores it. A catalog that fails leaves the
// config as it was, and a crash after the catalog's write restarts with
// the new config, which the metadata log had decided. A growth copies
// nothing of the config: its new Topic shares the pointer.

// AlterTopicConfig makes cfg topic id's config, for every generation and
// partition of it at once (see above), and records it in the catalog
// first, if there is one; a min.insync.replicas of zero is 1, as at
// creation. It returns the topic's last generation. It fails with an
// error wrapping ErrUnknownTopic (deleted too), ErrClosed, or the
// catalog's error, which leave the config as it was. The caller
// validates cfg (TopicConfig.With). O(1), plus the catalog's write.
func (s *Store) AlterTopicConfig(id TopicID, cfg TopicConfig) (*Topic, error) {
	t := s.lockTopic(func() *Topic { return s.byID[id] })
	if t == nil {
		return nil, fmt.Errorf("%w: id %s", ErrUnknownTopic, id)
	}
	defer t.life.alter.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	spec := TopicSpec{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions)), Config: cfg,
		ReplicationFactor: t.ReplicationFactor}.normalized()
	if c := s.cfg.catalog; c != nil {
		if err := c.AddTopic(spec); err != nil {
			return nil, fmt.Errorf("storage: alter the config of %s: %w", t.Name, err)
		}
	}
	t.life.config.Store(&spec.Config)
	return t, nil
}
