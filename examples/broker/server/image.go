package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The broker's side of the cluster's metadata: the metadata log (package
// metalog) it applies, and the controller (package controller) that is
// active while this broker leads the quorum. Who leads each partition, at
// which leader epoch, with which ISR, is read from the log's image, never
// decided here.
//
// Each record applied changes the storage to match (applied): a topic
// created gets its logs, a topic deleted loses them (and what waits on it
// is answered), a partition whose leadership or ISR changed takes its new
// leader epoch, and what waits on it is checked again: a produce or fetch
// waiting on a broker that no longer leads the partition is answered at
// once with NOT_LEADER_OR_FOLLOWER (delayed_produce.go, delayed_fetch.go).

// image returns the cluster's metadata as this broker has applied it.
func (s *Server) image() *metadata.Image { return s.member.Image() }

// seed is the record a broker alone starts its local metadata log with:
// the topics its log dir holds, each partition on this broker alone. A
// broker of a cluster has its quorum's log instead.
func (s *Server) seed() *metadata.Record {
	rec := &metadata.Record{}
	self := s.brokers.Self()
	for _, t := range s.data.store.Topics() {
		mt := &metadata.Topic{Name: t.Name, ID: metadata.TopicID(t.ID), ReplicationFactor: t.ReplicationFactor,
			Configs: ownConfigs(t.Config, s.data.store.TopicDefaults()), Partitions: make([]metadata.Partition, len(t.Partitions))}
		for i := range mt.Partitions {
			mt.Partitions[i] = metadata.Partition{Replicas: []int32{self}, ISR: []int32{self}, Leader: self}
		}
		rec.CreateTopics = append(rec.CreateTopics, mt)
	}
	return rec
}

// partitionState returns p's replicas, leader, epochs and ISR as the image
// has them; ok is false for a partition the image lacks (its topic
// deleted, or not yet applied here).
func (s *Server) partitionState(p *storage.Partition) (metadata.Partition, bool) {
	st, err := s.image().Partition(metadata.TopicID(p.Topic().ID), p.Index())
	return st, err == nil
}

// replicasOf returns p's replicas; the first is its preferred leader.
func (s *Server) replicasOf(p *storage.Partition) []int32 {
	st, _ := s.partitionState(p)
	return st.Replicas
}

// registered reports whether the image holds this broker's registration
// at its current epoch, unfenced. Until it does, a broker of a cluster
// leads nothing, whatever the image says: a restarted broker's image may
// still name it leader of partitions from before it restarted (its
// registration, not yet committed, is what takes it out of their ISR), and
// a leader that lost its log must not serve, nor have a follower truncate
// to it. A broker alone is always registered.
func (s *Server) registered() bool { return s.member.Registered() }

// registeredIn reports whether im has this broker registered, unfenced,
// at its current epoch. A broker alone always is.
func (s *Server) registeredIn(im *metadata.Image) bool { return s.member.RegisteredIn(im) }

// leaderState is partitionState as this broker may act on it: a partition
// it leads in the image is led by nobody here until it is registered.
func (s *Server) leaderState(p *storage.Partition) (metadata.Partition, bool) {
	st, ok := s.partitionState(p)
	if ok && st.Leader == s.brokers.Self() && !s.registered() {
		st.Leader = metadata.NoLeader
	}
	return st, ok
}

// leads returns nil if this broker leads p, else an error wrapping
// errNotLeader: a partition offline, led by another broker, this broker
// not yet registered, or one the image lacks (a broker still replaying
// the metadata log after a restart has its log dir's topics before the
// image does; NOT_LEADER_OR_FOLLOWER makes clients look again).
func (s *Server) leads(p *storage.Partition) error {
	st, ok := s.leaderState(p)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s-%d is not in the metadata log here", errNotLeader, p.Topic().Name, p.Index())
	case st.Leader != s.brokers.Self():
		return fmt.Errorf("%w: %s-%d is led by broker %d", errNotLeader, p.Topic().Name, p.Index(), st.Leader)
	}
	return nil
}

// leadsAt reports whether this broker still leads p at leader epoch
// epoch: a produce or fetch that started under it may go on.
func (s *Server) leadsAt(p *storage.Partition, epoch int32) bool {
	st, ok := s.leaderState(p)
	return ok && st.Leader == s.brokers.Self() && st.LeaderEpoch == epoch
}

// replicaCurrent reports whether broker id may fetch as a follower: it is
// registered and unfenced in the image, at epoch (a fetch before v15
// carries none: -1 is not checked). A broker alone has no followers.
func (s *Server) replicaCurrent(id int32, epoch int64) bool {
	return s.member.FollowerCurrent(id, epoch)
}

// notLeadingCode is the error of a request waiting on p that this broker
// no longer leads at the epoch it began under: UNKNOWN_TOPIC_OR_PARTITION
// (UNKNOWN_TOPIC_ID byID) if the topic was deleted, else
// NOT_LEADER_OR_FOLLOWER.
func (s *Server) notLeadingCode(p *storage.Partition, byID bool) int16 {
	if _, ok := s.partitionState(p); !ok || p.Deleted() {
		return partitionErrorCode(storage.ErrDeleted, byID)
	}
	return kerr.NotLeaderForPartition.Code
}

// isReplica reports whether replica holds a replica of p.
func (s *Server) isReplica(p *storage.Partition, replica int32) bool {
	return slices.Contains(s.replicasOf(p), replica)
}

// applied makes the storage follow a record applied to the metadata log
// (rec nil: a snapshot replaced the image). It runs on the log's apply
// goroutine, before the proposer's Propose returns.
func (s *Server) applied(before, after *metadata.Image, rec *metadata.Record) {
	store := s.data.store
	var gone []storage.TopicID
	if rec != nil {
		for _, id := range rec.DeleteTopics {
			gone = append(gone, storage.TopicID(id))
		}
	} else {
		for _, t := range store.Topics() {
			if _, err := after.TopicByID(metadata.TopicID(t.ID)); err != nil {
				gone = append(gone, t.ID)
			}
		}
	}
	for _, id := range gone {
		s.deleteLocalTopic(id)
	}
	var changed []metadata.PartitionChange
	created := after.Topics()
	if rec != nil {
		created = rec.CreateTopics
		changed = rec.Partitions
	}
	for _, t := range created {
		t, err := after.TopicByID(t.ID) // as applied: a duplicate name was skipped
		if err != nil {
			continue
		}
		s.ensureLocalTopic(t)
		for i, p := range t.Partitions {
			changed = append(changed, metadata.PartitionChange{Topic: t.ID, Index: int32(i), Partition: p})
		}
	}
	if s.registeredIn(before) != s.registeredIn(after) {
		// This broker's own registration came or went: it starts or
		// stops leading what the image gives it, though no partition
		// changed (a broker leads nothing until registered).
		changed = append(changed, ledBy(after, s.brokers.Self())...)
	}
	for _, c := range changed {
		t, err := store.TopicByID(storage.TopicID(c.Topic))
		if err != nil {
			continue
		}
		p, err := t.Partition(c.Index)
		if err != nil {
			continue
		}
		st, err := after.Partition(c.Topic, c.Index)
		if err != nil {
			continue
		}
		p.SetLeaderEpoch(st.LeaderEpoch)
		if s.leads(p) == nil {
			// Kafka's makeLeader: the new epoch starts at the log end,
			// so that a follower that diverged in the previous epoch
			// learns where that epoch ends here before this leader
			// takes a record.
			if err := p.AssignLeaderEpoch(st.LeaderEpoch); err != nil {
				s.log.Warn("recording a new leader epoch", zap.String("topic", p.Topic().Name),
					zap.Int32("partition", p.Index()), zap.Error(err))
			}
		}
		// A new leader's high watermark may move with its ISR; a former
		// leader's waiting requests see it no longer leads.
		s.leaders.AfterAppend(p)
		s.wake(p)
	}
	// The groups follow their offsets partitions' leaders.
	s.gparts.follow(after)
}

// ledBy returns every partition im has broker id lead.
func ledBy(im *metadata.Image, id int32) []metadata.PartitionChange {
	var out []metadata.PartitionChange
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if p.Leader == id {
				out = append(out, metadata.PartitionChange{Topic: t.ID, Index: int32(i), Partition: p})
			}
		}
	}
	return out
}

// ensureLocalTopic creates t's logs here unless they exist under its id;
// a topic of the same name under another id (deleted while this broker
// was away) is deleted first.
func (s *Server) ensureLocalTopic(t *metadata.Topic) {
	store := s.data.store
	if _, err := store.TopicByID(storage.TopicID(t.ID)); err == nil {
		return
	}
	if old, err := store.Topic(t.Name); err == nil {
		s.deleteLocalTopic(old.ID)
	}
	cfg := store.TopicDefaults()
	for k, v := range t.Configs {
		if next, err := cfg.With(k, &v); err == nil {
			cfg = next
		}
	}
	_, err := store.CreateTopicSpec(storage.TopicSpec{Name: t.Name, ID: storage.TopicID(t.ID), Partitions: int32(len(t.Partitions)),
		Config: cfg, ReplicationFactor: t.ReplicationFactor})
	if err != nil && !errors.Is(err, storage.ErrTopicExists) {
		s.log.Error("creating a topic the metadata log holds", zap.String("topic", t.Name), zap.Error(err))
		return
	}
	s.log.Info("created topic", zap.String("topic", t.Name), zap.Int("partitions", len(t.Partitions)),
		zap.Int16("replication_factor", t.ReplicationFactor))
}

// deleteLocalTopic deletes the logs of topic id, if here, and answers what
// waits on them.
func (s *Server) deleteLocalTopic(id storage.TopicID) {
	t, err := s.data.store.DeleteTopicByID(id)
	if t == nil {
		return
	}
	if err != nil {
		s.log.Warn("closing a deleted topic's logs", zap.String("topic", t.Name), zap.Error(err))
	}
	s.wakeDeleted(t)
	s.log.Info("deleted topic", zap.String("topic", t.Name))
}

// ownConfigs returns the configs of cfg that differ from defaults, as a
// topic's own, by name.
func ownConfigs(cfg, defaults storage.TopicConfig) map[string]string {
	own := make(map[string]string)
	dv := defaults.Values()
	for i, v := range cfg.Values() {
		if i < len(dv) && dv[i].Value != v.Value {
			own[v.Name] = v.Value
		}
	}
	return own
}

// controllerTimeout bounds a decision's wait for the quorum.
const controllerTimeout = cluster.ControllerTimeout

// IsController reports whether this broker is the active controller, for
// tests and tools.
func (s *Server) IsController() bool { return s.member.IsController() }
