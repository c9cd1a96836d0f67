package storage

import (
	"errors"
	"fmt"
)

// TopicSpec is what a Catalog keeps of a topic: enough to make it again.
type TopicSpec struct {
	Name       string
	ID         TopicID
	Partitions int32
	Config     TopicConfig
}

// A Catalog keeps the topics' definitions where a restarted store finds
// them; WithCatalog sets it, and without one topics live and die in
// memory. New opens every topic it lists, with its partitions' logs.
// CreateTopic records a topic before the topic is published (a topic
// whose logs then fail to open is removed again), and DeleteTopic removes
// it before its logs are, so that a crash in between leaves at worst logs
// no topic names, which the catalog may delete on the next start, never a
// topic without its logs. Calls are serialised by the store per name, not
// across names: a Catalog guards itself.
type Catalog interface {
	// Topics returns every topic recorded, once, when the store opens.
	Topics() ([]TopicSpec, error)
	// AddTopic records spec, durably, before it returns.
	AddTopic(spec TopicSpec) error
	// RemoveTopic forgets the topic, durably, before it returns; a topic
	// it does not know is no error.
	RemoveTopic(name string, id TopicID) error
}

// openTopic makes the topic spec describes and opens its partitions'
// logs. If one fails, those opened are closed again, and with remove also
// removed (a topic being created leaves nothing behind; one being loaded
// keeps its batches on disk for the operator).
func (s *Store) openTopic(spec TopicSpec, remove bool) (*Topic, error) {
	t := &Topic{Name: spec.Name, ID: spec.ID, Config: spec.Config, Partitions: make([]*Partition, spec.Partitions)}
	for i := range t.Partitions {
		log, err := s.cfg.open(t.Name, t.ID, int32(i))
		if err == nil {
			if t.Partitions[i], err = openPartition(t, int32(i), &s.cfg, log); err != nil {
				err = errors.Join(err, closeLog(log, remove))
			}
		}
		if err != nil {
			for _, p := range t.Partitions[:i] {
				_ = p.close(remove)
			}
			return nil, fmt.Errorf("storage: open %s-%d: %w", t.Name, i, err)
		}
	}
	return t, nil
}

func closeLog(l Log, remove bool) error {
	if remove {
		return l.Remove()
	}
	return l.Close()
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
		t, err := s.openTopic(spec, false)
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
	}
	return nil
}
