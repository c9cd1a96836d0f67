// Package consumergroup is the broker's coordinator of KIP-848 consumer
// groups, Kafka 4's "consumer" group protocol: members heartbeat
// (ConsumerGroupHeartbeat) and the coordinator, not a leader member,
// computes the group's assignment and walks each member to it. It knows
// nothing of the wire: package server decodes requests, calls the
// Coordinator and encodes its answers. Committed offsets stay the classic
// coordinator's (package group), as Kafka keeps them in one offset
// manager for both protocols; this package only says whether a commit or
// a fetch of a consumer group's member is taken (offsets.go: at the
// member's epoch, or at an older one for the partitions it held then,
// KIP-1251's assignment epochs).
//
// # Epochs
//
// A group has an epoch, bumped when its target assignment must be
// computed again: a member joins, leaves, is fenced or changes its
// subscription, or a topic it subscribes to is created, deleted or grows
// (the group checks its subscribed topics whenever the broker's topics
// change: Topics.Version). The target assignment has the epoch it was
// computed at, and is computed at the first heartbeat that finds it behind
// (Kafka's TargetAssignmentBuilder), by the assignor most members ask for
// among group.consumer.assignors (uniform, range: assignor.go). Each member
// has its own epoch, which reaches the target's once it holds nothing
// another member is to have: reconcile.go walks it there one heartbeat at
// a time (Kafka's CurrentAssignmentBuilder), telling it to revoke
// partitions first and giving it partitions only once free, so that no
// partition is owned by two members.
//
// A member's subscription is topic names, or a regular expression the
// coordinator resolves against every topic (internal ones included) and
// resolves again whenever the topics change, matching whole names, as
// Kafka's RE2/J does; Go's regexp is RE2, the same syntax.
//
// Members are dynamic, or static (an instance id, KIP-345): a static
// member that leaves with epoch -2 keeps its partitions and target until
// its session expires; a member that joins with its instance id takes
// them over under its new member id, at the same epoch, without a
// rebalance. A second member with the instance id while the first is
// still in is refused (UNRELEASED_INSTANCE_ID).
//
// # Timers, not sweeps
//
// Each member has two timer tasks on the coordinator's timer, embedded in
// it (timers.go), the shape of Kafka's CoordinatorTimer keyed by member:
// its session, moved ahead by each heartbeat in O(1), whose expiry removes
// the member; and its rebalance timeout, running while it must revoke
// partitions, whose expiry fences it. Nothing scans the members. With a
// *timer.ManualClock (WithClock) they fire inside its Advance: the tests
// are deterministic.
//
// # Lock order
//
// A group's mutex, then Coordinator.mu (the map of groups), a leaf. A
// timer task runs with no lock held and takes its group's mutex; the
// tasks are only ever (re)scheduled with a positive delay under it, which
// never runs them at once.
//
// # The end of a group
//
// A group left without members (its last member left, its session
// expired, it was fenced) is handed to WithOnEmpty's hook, with no lock
// held. The broker's starts the expiry of its offsets, which the classic
// coordinator keeps and does not expire while the group has members
// (package group's WithHeld), and deletes the group at once if it has
// none, or when the last of them expires, as Kafka deletes an Empty
// consumer group whose offsets are gone.
//
// # Not implemented
//
// The groups' records in __consumer_offsets (Kafka's
// ConsumerGroupMetadata, ConsumerGroupMemberMetadata, target and current
// assignment records): a group lives in its coordinator's memory, and a
// coordinator that moves, or a broker that restarts, loses it; members
// are then told UNKNOWN_MEMBER_ID and join again, at a new epoch, from
// their committed offsets. Classic members in a consumer group (Kafka's
// upgrade and downgrade of a group between the protocols), rack-aware
// assignment, group.consumer.max.size and the client-side assignors of
// KIP-848 are not served.
package consumergroup
