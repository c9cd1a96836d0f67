package replica

import (
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The storage follows the cluster's metadata log: each record applied
// changes it to match (Apply), as Kafka's ReplicaManager.applyDelta does.
// A topic created gets its logs, a topic grown (CreatePartitions) gets
// the new partitions' logs, as leader or follower as the record places
// them, a partition whose replicas changed (a reassignment) has its new
// followers fetch and the brokers it left drop their copy, a topic whose
// own configs changed (AlterConfigs) gets its new config live (storage.Store.AlterTopicConfig: the next produce, sweep
// and acks=all check see it), a topic deleted loses them (and what
// waits on it is answered), a partition whose leadership or ISR changed
// takes its new leader epoch, and what waits on it is checked again: a
// produce or fetch waiting on a broker that no longer leads the partition
// is answered at once with NOT_LEADER_OR_FOLLOWER (delayed_produce.go,
// delayed_fetch.go).

// Seed returns the record a broker alone starts its local metadata log
// with: the topics its log dir holds, each partition on this broker alone.
// A broker of a cluster has its quorum's log instead.
func (m *Manager) Seed() *metadata.Record {
	rec := &metadata.Record{}
	self := m.member.Self()
	for _, t := range m.store.Topics() {
		mt := &metadata.Topic{Name: t.Name, ID: metadata.TopicID(t.ID), ReplicationFactor: t.ReplicationFactor,
			Configs: ownConfigs(t.Config(), m.store.TopicDefaults()), Partitions: make([]metadata.Partition, len(t.Partitions))}
		for i := range mt.Partitions {
			mt.Partitions[i] = metadata.Partition{Replicas: []int32{self}, ISR: []int32{self}, Leader: self}
		}
		rec.CreateTopics = append(rec.CreateTopics, mt)
	}
	return rec
}

// Apply makes the storage follow a record applied to the metadata log
// (rec nil: a snapshot replaced the image), before after's image, and
// wakes what waits on the partitions it changed. It runs on the log's
// apply goroutine, before the proposer's Propose returns.
func (m *Manager) Apply(before, after *metadata.Image, rec *metadata.Record) {
	store := m.store
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
		m.deleteLocalTopic(id)
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
		m.ensureLocalTopic(t)
		for i, p := range t.Partitions {
			changed = append(changed, metadata.PartitionChange{Topic: t.ID, Index: int32(i), Partition: p})
		}
	}
	if rec != nil {
		for _, tc := range rec.TopicConfigs {
			if t, err := after.TopicByID(tc.Topic); err == nil {
				m.ensureLocalTopic(t)
			}
		}
		for _, np := range rec.AddPartitions {
			t, err := after.TopicByID(np.Topic)
			if err != nil {
				continue
			}
			m.ensureLocalTopic(t)
			// The new partitions start as a created topic's do: each
			// takes its leader epoch, and its leader starts its epoch
			// and its followers' state; the fetchers find the others
			// on their next round. An entry the image skipped adds
			// nothing here either.
			for i := int(np.From); i < len(t.Partitions); i++ {
				changed = append(changed, metadata.PartitionChange{Topic: t.ID, Index: int32(i), Partition: t.Partitions[i]})
			}
		}
	}
	if m.member.RegisteredIn(before) != m.member.RegisteredIn(after) {
		// This broker's own registration came or went: it starts or
		// stops leading what the image gives it, though no partition
		// changed (a broker leads nothing until registered).
		changed = append(changed, ledBy(after, m.member.Self())...)
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
		// A partition with followers has its high watermark moved by
		// its leader's view of them; one alone, by its appends. A
		// reassignment can turn either into the other (a partition of
		// one replica moved to another broker has two while it runs).
		p.SetHighWatermarkManaged(len(st.Replicas) > 1)
		if was, err := before.Partition(c.Topic, c.Index); err == nil && m.removedFrom(was, st) {
			m.dropLocalCopy(p)
		}
		if m.Leads(p) == nil {
			// Kafka's makeLeader: the new epoch starts at the log end,
			// so that a follower that diverged in the previous epoch
			// learns where that epoch ends here before this leader
			// takes a record.
			if err := p.AssignLeaderEpoch(st.LeaderEpoch); err != nil {
				m.log.Warn("recording a new leader epoch", zap.String("topic", p.Topic().Name),
					zap.Int32("partition", p.Index()), zap.Error(err))
			}
		}
		// A new leader's high watermark may move with its ISR; a former
		// leader's waiting requests see it no longer leads.
		m.leaders.AfterAppend(p)
		m.Wake(p)
	}
}

// removedFrom reports whether this broker was a replica of a partition
// in was and is no longer in st: a reassignment that completed without
// it, or a cancelled one that was adding it.
func (m *Manager) removedFrom(was, st metadata.Partition) bool {
	self := m.member.Self()
	return slices.Contains(was.Replicas, self) && !slices.Contains(st.Replicas, self)
}

// dropLocalCopy empties p's log here, this broker no longer being one of
// its replicas (Kafka's StopReplica with deletion): the leader epoch has
// moved already, so a replica fetch in flight appends nothing after it
// (AppendReplicaAt), and the fetchers and the leader's view no longer
// count this broker. If it is made a replica again, it starts empty and
// catches up as any new follower does. A failure is logged: the copy
// stays, unread, until then.
func (m *Manager) dropLocalCopy(p *storage.Partition) {
	if err := p.TruncateFullyAndStartAt(0); err != nil {
		m.log.Warn("dropping a partition this broker is no longer a replica of", zap.String("topic", p.Topic().Name),
			zap.Int32("partition", p.Index()), zap.Error(err))
		return
	}
	m.log.Info("dropped a partition this broker is no longer a replica of", zap.String("topic", p.Topic().Name),
		zap.Int32("partition", p.Index()))
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

// ensureLocalTopic creates t's logs here unless they exist under its id,
// and adds the partitions t has that they lack (a growth, or a snapshot
// that holds one this broker missed), and gives the local topic t's
// config if it has another (a config change, or a snapshot); a topic of
// the same name under another id (deleted while this broker was away)
// is deleted first.
func (m *Manager) ensureLocalTopic(t *metadata.Topic) {
	store := m.store
	cfg := m.localConfig(t)
	if local, err := store.TopicByID(storage.TopicID(t.ID)); err == nil {
		if len(local.Partitions) < len(t.Partitions) {
			m.growLocalTopic(t)
		}
		if local.Config() != cfg {
			m.alterLocalConfig(t, cfg)
		}
		return
	}
	if old, err := store.Topic(t.Name); err == nil {
		m.deleteLocalTopic(old.ID)
	}
	_, err := store.CreateTopicSpec(storage.TopicSpec{Name: t.Name, ID: storage.TopicID(t.ID), Partitions: int32(len(t.Partitions)),
		Config: cfg, ReplicationFactor: t.ReplicationFactor})
	if err != nil && !errors.Is(err, storage.ErrTopicExists) {
		m.log.Error("creating a topic the metadata log holds", zap.String("topic", t.Name), zap.Error(err))
		return
	}
	m.log.Info("created topic", zap.String("topic", t.Name), zap.Int("partitions", len(t.Partitions)),
		zap.Int16("replication_factor", t.ReplicationFactor))
}

// growLocalTopic adds the partitions of t the local topic lacks. A
// failure is logged: the image has them, and this broker answers
// UNKNOWN_TOPIC_OR_PARTITION for them until it applies the image again (a
// restart replays its metadata log); the storage left the topic, and its
// catalog, as they were.
func (m *Manager) growLocalTopic(t *metadata.Topic) {
	if _, err := m.store.AddPartitions(storage.TopicID(t.ID), int32(len(t.Partitions))); err != nil {
		m.log.Error("adding partitions the metadata log holds", zap.String("topic", t.Name),
			zap.Int("partitions", len(t.Partitions)), zap.Error(err))
		return
	}
	m.log.Info("added partitions", zap.String("topic", t.Name), zap.Int("partitions", len(t.Partitions)))
}

// localConfig returns the storage config of t: the broker's defaults with
// t's own configs. The metadata log holds only values the controller
// checked; one this broker's storage refuses all the same is left at its
// default (and logged), rather than refuse the topic.
func (m *Manager) localConfig(t *metadata.Topic) storage.TopicConfig {
	cfg := m.store.TopicDefaults()
	for k, v := range t.Configs {
		next, err := cfg.With(k, &v)
		if err != nil {
			m.log.Warn("a topic config of the metadata log is left at its default", zap.String("topic", t.Name), zap.Error(err))
			continue
		}
		cfg = next
	}
	return cfg
}

// alterLocalConfig makes cfg the local topic t's config, live, and wakes
// what waits on its partitions: an acks=all produce is checked again
// under the new min.insync.replicas. A failure (the catalog's) is
// logged: the image has the new config, and this broker keeps the old
// one until it applies the image again (a restart replays its metadata
// log).
func (m *Manager) alterLocalConfig(t *metadata.Topic, cfg storage.TopicConfig) {
	local, err := m.store.AlterTopicConfig(storage.TopicID(t.ID), cfg)
	if err != nil {
		m.log.Error("changing a topic's config as the metadata log holds it", zap.String("topic", t.Name), zap.Error(err))
		return
	}
	for _, p := range local.Partitions {
		m.Wake(p)
	}
	m.log.Info("changed a topic's config", zap.String("topic", t.Name), zap.Any("configs", t.Configs))
}

// RefreshConfigs gives every local topic of im the config the store's
// defaults and its own configs resolve to now, live, where it changed:
// the defaults were replaced (the dynamic broker configs changed), and a
// topic without its own value takes the new one at once. O(topics).
func (m *Manager) RefreshConfigs(im *metadata.Image) {
	for _, t := range im.Topics() {
		local, err := m.store.TopicByID(storage.TopicID(t.ID))
		if err != nil {
			continue
		}
		if cfg := m.localConfig(t); local.Config() != cfg {
			m.alterLocalConfig(t, cfg)
		}
	}
}

// deleteLocalTopic deletes the logs of topic id, if here, and answers what
// waits on them.
func (m *Manager) deleteLocalTopic(id storage.TopicID) {
	t, err := m.store.DeleteTopicByID(id)
	if t == nil {
		return
	}
	if err != nil {
		m.log.Warn("closing a deleted topic's logs", zap.String("topic", t.Name), zap.Error(err))
	}
	// Each fetch and produce waiting on its partitions sees them deleted
	// and is answered with an error now rather than at its deadline.
	for _, p := range t.Partitions {
		m.Wake(p)
	}
	m.log.Info("deleted topic", zap.String("topic", t.Name))
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
