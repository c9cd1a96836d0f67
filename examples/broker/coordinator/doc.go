// Package coordinator is the coordinator runtime (Kafka 4's
// coordinator-common CoordinatorRuntime): it hosts a coordinator's state
// on the partitions of an internal topic, so that the group coordinator
// (package group, hosted by package group/service on __consumer_offsets),
// the transaction coordinator (package txn, hosted by txn.Host on
// __transaction_state), and the share coordinator (package sharestate,
// hosted by sharestate.Host on __share_group_state), are state machines
// beside it and nothing more.
//
// # What it does for a coordinator
//
// A coordinator is a Shard: a state machine whose state of each partition
// is a State replayed from the partition's records. The runtime (Host)
//
//   - creates its topic the first time a key is looked up (Topic.Ensure,
//     through the active controller), with its own partition count and
//     configs, its replication factor capped at the cluster's size (and
//     its min.insync.replicas, if it sets one, at that factor), and marks
//     it internal (IsInternal: clients may not produce to it);
//   - places each key in a partition by hash, as Kafka does (PartitionFor:
//     abs(key.hashCode) % partitions, Java's String hashCode), coordinated
//     by that partition's leader (Topic.PartitionOf tells a shard a key's
//     partition, once loaded);
//   - follows the metadata log (Runtime.Follow): on becoming a partition's
//     leader it replays the partition to its log end and hands the state
//     to the shard with the leader epoch it leads it at (Shard.Load: the
//     transaction coordinator's markers carry it as their coordinator
//     epoch); on losing it, it has the shard forget its keys and answer
//     what waits on them (Shard.Unload); meanwhile its keys are
//     COORDINATOR_LOAD_IN_PROGRESS, elsewhere NOT_COORDINATOR
//     (Topic.KeyError, Topic.Owns) (load.go);
//   - appends the shard's records to the key's partition and, for what
//     must be durable, waits in the Produce purgatory until the high
//     watermark passes them, as an acks=all produce does (Topic.Append,
//     append.go);
//   - keeps each partition bounded by compacting it: once its dead records
//     call for it, the leader appends the live ones again and moves the
//     log start past the rest when they are replicated (compaction.go).
//
// The runtime stands on replica management (package replica: appends, the
// high watermark, leadership) and this broker's cluster membership
// (package cluster: the image, its registration); the request handlers
// (package server) call the coordinators and route their requests with
// KeyError. Nothing here imports server or a coordinator.
//
// # Goroutines
//
// One per partition being loaded (its replay, which takes no lock while
// it reads), which Runtime.Wait waits for. Follow runs on the metadata
// log's apply goroutine; Append and KeyError on the request handlers'
// (and the shard's timers'); a delayed append completes on whichever
// goroutine completes it (an appender's Wake, a follower's fetch moving
// the high watermark, the purgatory's timer).
//
// # Lock order
//
// Topic.mu (the partitions loaded; held across Shard.Load and
// Shard.Unload), then the shard's locks (a group's mutex, a transactional
// id's: the shard calls Owns, PartitionOf and Append with it held), then
// a partition's compaction's mu, then the storage partition's own lock.
// Nothing under a shard's lock takes Topic.mu. An append's wait is submitted with no lock held (the shard
// calls it once its lock is released), but a rewrite's, submitted from
// Append under the shard's lock: it completes under the compaction's mu
// alone, which comes after the shard's.
package coordinator
