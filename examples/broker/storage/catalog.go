package storage

import (
	"errors"
	"fmt"
)

// TopicSpec is what a Catalog keeps of a topic: enough to make it again.
// Store.CreateTopicSpec creates a topic from one.
type TopicSpec struct {
	Name       string
	ID         TopicID // zero: CreateTopicSpec picks a new one
	Partitions int32
	Config     TopicConfig
	// ReplicationFactor is how many brokers hold each partition; 0
	// means 1, as does a catalog entry without it.
	ReplicationFactor int16
}

// normalized returns spec with its defaults made explicit: a replication
// factor and a min.insync.replicas of 1 where they are zero, so that a
// topic's fields and its catalog entry say what they mean.
func (spec TopicSpec) normalized() TopicSpec {
	if spec.ReplicationFactor == 0 {
		spec.ReplicationFactor = 1
	}
	spec.Config.MinInsyncReplicas = spec.Config.MinISR()
	return spec
}

// A Catalog keeps the topics' definitions where a restarted store finds
// them; WithCatalog sets it, and without one topics live and die in
// memory. New opens every topic it lists, with its partitions' logs.
// CreateTopic records a topic before the topic is published (a topic
// whose logs then fail to open is removed again), AddPartitions records
// its new count once the new logs are open, AlterTopicConfig its new
// config before it applies, and DeleteTopic removes
// it before its logs are, so that a crash in between leaves at worst logs
// no topic names, which the catalog may delete on the next start, never a
// topic without its logs. Calls are serialised by the store per name, not
// across names: a Catalog guards itself.
type Catalog interface {
	// Topics returns every topic recorded, once, when the store opens.
	Topics() ([]TopicSpec, error)
	// AddTopic records spec, durably, before it returns, in place of
	// the entry of the same name if there is one: a topic grown
	// (Store.AddPartitions) is recorded again with its new count, one
	// whose config changed (Store.AlterTopicConfig) with its new
	// config.
	AddTopic(spec TopicSpec) error
	// RemoveTopic forgets the topic, durably, before it returns; a topic
	// it does not know is no error.
	RemoveTopic(name string, id TopicID) error
}

// openTopic makes the topic spec describes and opens its partitions'
// logs. If one fails, those opened are closed again and returned, for a
// caller creating the topic to remove once the catalog has forgotten it
// (one loading it keeps their batches on disk for the operator).
func (s *Store) openTopic(spec TopicSpec) (*Topic, []Log, error) {
	spec = spec.normalized()
	t := &Topic{Name: spec.Name, ID: spec.ID, ReplicationFactor: spec.ReplicationFactor,
		Partitions: make([]*Partition, spec.Partitions), life: newTopicLife(spec.Config)}
	if opened, err := s.openPartitions(t, 0); err != nil {
		return nil, opened, err
	}
	return t, nil, nil
}

// openPartitions opens the logs of t's partitions from index from on,
// filling t.Partitions, which t's owner has not published yet. If one
// fails, those it opened are closed again and returned, as openTopic
// says.
func (s *Store) openPartitions(t *Topic, from int) ([]Log, error) {
	var opened []Log
	for i := from; i < len(t.Partitions); i++ {
		log, err := s.cfg.open(t.Name, t.ID, int32(i))
		if err == nil {
			opened = append(opened, log)
			t.Partitions[i], err = openPartition(t, int32(i), &s.cfg, log)
		}
		if err != nil {
			for _, l := range opened {
				_ = l.Close()
			}
			return opened, fmt.Errorf("storage: open %s-%d: %w", t.Name, i, err)
		}
	}
	return nil, nil
}

// load opens every topic of the catalog: a topic whose logs cannot be
// opened fails New, rather than start without acknowledged data.
//
// REQUIRES: s not yet shared.
func (s *Store) load() error {
	specs, err := s.cfg.catalog.Topics()
	if err != nil {
		return fmt.Errorf("storage: load topics: %w", err)
	}
	for _, spec := range specs {
		t, _, err := s.openTopic(spec)
		if err == nil {
			_, taken := s.byID[t.ID]
			if _, dup := s.byName[t.Name]; dup || taken {
				err = errors.Join(fmt.Errorf("storage: the catalog lists %s (id %s) twice", t.Name, t.ID), t.closePartitions(false))
			}
		}
		if err != nil {
			for _, t := range s.byName {
				_ = t.closePartitions(false)
			}
			return err
		}
		s.byName[t.Name], s.byID[t.ID] = t, t
		s.partitions += len(t.Partitions)
	}
	return nil
}
