// Package sharestate is the broker's share coordinator (KIP-932; Apache
// Kafka's ShareCoordinatorService and ShareCoordinatorShard): it keeps
// each share partition's state, the share-partition start offset and the
// delivery state and count of the records in flight, durably in the
// internal topic __share_group_state, so that a share partition's new
// leader, after a restart or a leadership move, goes on where the last
// one stopped.
//
// # Where a state lives
//
// Each share partition (a share group's state of one partition) is a key,
// "groupId:topicId:partition" (Key.String, Kafka's
// SharePartitionKey.asCoordinatorKey), in the partition of
// __share_group_state that coordinator.PartitionFor places it in, as
// Kafka places it. The coordinator runtime (package coordinator) hosts
// the coordinator on that topic (Host): it creates the topic with Kafka's
// settings (share.coordinator.state.topic.num.partitions 50, replication
// factor 3 and min.insync.replicas 2, both capped at the cluster's size,
// compacted), loads the states of a partition when this broker comes to
// lead it (the key's requests are COORDINATOR_LOAD_IN_PROGRESS meanwhile,
// NOT_COORDINATOR on every other broker), forgets them when it stops,
// and compacts each partition. FindCoordinator's key type SHARE (2)
// finds a key's coordinator.
//
// # The RPCs
//
// The leader of a partition (package share) is the coordinator's client,
// through the inter-broker RPCs InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary (package server serves them with kmsg's
// types; CLUSTER_ACTION). Their semantics, the state epoch's and the
// leader epoch's fences among them, are in ops.go.
//
// # The records
//
// This broker's own record format, not Kafka's ShareSnapshot and
// ShareUpdate records (which kmsg does not have, and which this broker
// will not hand-encode): a key's record is a DeleteShareGroupStateRequest
// (the key) and a WriteShareGroupStateRequest (the state whole), each of
// one partition, encoded by kmsg at a fixed version. Every write is a
// full snapshot; see records.go.
//
// # Lock order
//
// The runtime's Topic.mu (around Load and Unload), then Coordinator.mu,
// then the runtime's compaction's mu and the storage partition's own lock
// (inside an append). Every answer (a done function) is called with no
// lock of the coordinator's held.
package sharestate
