// Package service runs the group coordinator (package group) on the
// coordinator runtime (package coordinator), as Kafka's
// GroupCoordinatorService runs its GroupCoordinatorShards on the
// CoordinatorRuntime: the coordinator's state is the records of
// __consumer_offsets (package group/records), one partition of it per
// group, hosted by the broker that leads it.
//
// It is the glue the two need and neither has: the group coordinator's
// OffsetStore, which writes each change of a group as a batch of
// __consumer_offsets' records through the runtime (a commit and a group's
// metadata waiting for their replication, tombstones not; a transaction's
// offsets as a transactional batch of its producer, which its marker
// ends); the KIP-848 coordinator's Store (ConsumerStore) and the share
// group coordinator's (ShareStore), which write each change of a consumer
// or share group as a batch of this broker's own records
// (records.ConsumerGroup, records.ShareGroup) to the same partition,
// compacted with the rest; and the shard the runtime loads and unloads,
// which replays a partition's records (records.Replay) and hands its
// groups to the coordinators (the consumer groups to Config.OnLoad first,
// the share groups to Config.OnLoadShares, then the classic groups), or
// has them forget them. Package group knows nothing of
// the wire, the log or the runtime; package records nothing but the
// records. (This package sits beside them rather than in package group
// because records, which the glue needs, imports group for its stored
// types.)
//
// # Goroutines and lock order
//
// None of its own: the store runs on the coordinator's goroutines, with a
// group's mutex held (group's doc), and the shard on the runtime's (its
// Topic.mu held). The runtime's lock order stands: Topic.mu, then a
// group's mutex, then the coordinator's map, then a partition's
// compaction.
package service
