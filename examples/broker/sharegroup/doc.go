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
// every heartbeat in O(1) (group.share.session.timeout.ms, 45 s); its
// expiry removes the member as a leave does. The Coordinator's Left
// function hears of every member that leaves, so that the records it
// acquired are released.
//
// # Lock order
//
// Coordinator.mu alone. The timer is called with it held; an expiring
// session takes it on a timer worker. Left is called with no lock held.
//
// # Not durable
//
// Kafka writes share groups to __consumer_offsets (ShareGroupMetadata,
// ShareGroupMemberMetadata and the assignment records); here they live in
// memory, and a coordinator that restarts or moves starts with no share
// groups: members get UNKNOWN_MEMBER_ID and join again.
package sharegroup
