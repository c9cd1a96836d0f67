// Package sharegroup is the share-group half of the group coordinator
// (KIP-932; the share-group part of Apache Kafka's GroupMetadataManager):
// the members of each share group, their subscriptions, the group epoch
// and each member's assignment, kept alive by ShareGroupHeartbeat. It
// knows nothing of the wire: package server decodes the requests and
// encodes what the Coordinator answers. What the members consume, and who
// holds which record, is package share's, on each partition's leader.
//
// # Epochs and assignment
//
// A member joins with epoch 0 and the id it made itself (KIP-1082; one is
// made for it before version 1), and leaves with epoch -1. Every join,
// leave, change of subscription or change of a subscribed topic's
// partitions bumps the group epoch and recomputes the target assignment
// with Kafka's simple assignor for share groups, per topic: with at least
// as many members as partitions, member i (in id order) gets partition
// i mod n, so every member gets one and a partition may be shared; with
// fewer, partition j goes to member j mod m. Share groups have no
// revocation (a partition may be consumed by several members at once), so
// a member takes the target assignment and the group epoch on its next
// heartbeat, which carries the assignment only when it changed.
//
// # Sessions
//
// Each member's session is a task of the library's timer, rescheduled by
// every heartbeat in O(1) (group.share.session.timeout.ms, 45 s, or the
// group's own share.session.timeout.ms: Config.Timeouts); its expiry
// removes the member as a leave does. The Coordinator's Left
// function hears of every member that leaves, so that the records it
// acquired are released.
//
// # Lock order
//
// Coordinator.mu alone. The timer and the Store are called with it held
// (in the broker, the store takes the runtime's partition locks after
// it); an expiring session takes it on a timer worker. Left, and a
// change's wait, are called with no lock held. Load and Unload run on the
// runtime's goroutines, under its Topic.mu, which comes before
// Coordinator.mu.
//
// # Kept in __consumer_offsets
//
// With a Store (Config.Store; the broker's is package group/service's, in
// the format of package group/records) each change of a group is appended
// to the group's partition of __consumer_offsets, as Kafka writes its
// ShareGroup* records (store.go): the group's epoch, target epoch and
// subscribed topics' hash (Kafka's ShareGroupMetadata and
// ShareGroupTargetAssignmentMetadata); each member's rack, client and
// subscription (ShareGroupMemberMetadata), its epoch and assigned
// partitions (ShareGroupCurrentMemberAssignment) and its target
// (ShareGroupTargetAssignmentMember); a tombstone when a member leaves or
// its session expires, and when the group is deleted. What changed is
// found by comparing each member with what was last stored: a heartbeat
// that changes nothing writes nothing. A heartbeat that changes something
// is answered once its batch is durable (the partition's high watermark
// passed it), as Kafka's runtime answers; a change nobody waits for (a
// session expired, an empty group made by AlterShareGroupOffsets) is
// appended all the same. The groups, their records and their replay are
// shaped as package consumergroup's, and share its plumbing
// (internal/groupstore).
//
// When a broker comes to lead a partition, its replay hands the share
// groups to Load: each comes back at its epochs with its members, their
// ids, subscriptions, assignments and targets, each member's session
// started afresh (Kafka schedules a loaded member's session timeout), so
// that a member that never comes back is removed; the subscribed topics
// are compared at the group's next heartbeat with the hash stored, so
// the epoch moves only if they changed meanwhile. Members that keep
// heartbeating go on at the same epochs. Unload forgets the groups of a
// partition no longer led here, telling nobody they left; their members
// are NOT_COORDINATOR there and find the new coordinator. A change the
// store refuses is not rolled back in memory: the heartbeat is answered
// the error (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE), and the new
// leader loads what the log has.
//
// # Not durable
//
// Kafka's ShareGroupStatePartitionMetadata (which topics' share-partition
// state the group has initialized at the share coordinator) is not
// written: here a share partition's leader initializes its state at the
// share coordinator when it first serves it (package sharestate).
package sharegroup
