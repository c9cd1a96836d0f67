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
// A group's mutex, then Coordinator.mu (the map of groups), a leaf; a
// Store's Append runs under the group's mutex (in the broker, the
// runtime's compaction lock and the storage partition's come after it),
// and a change's wait with no lock held. Load runs under the runtime's
// Topic.mu, before both. A
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
// # Kept in __consumer_offsets
//
// With a Store (WithStore; the broker's is package group/service's, in
// the format of package group/records) each change of a group is
// appended to the group's partition of __consumer_offsets, beside its
// committed offsets, as Kafka writes its consumer group records: the
// group's epoch, target epoch, assignor and subscribed topics' hash; each
// member's ids, client, subscription, server assignor, rebalance timeout,
// epoch and previous epoch, partitions assigned and pending revocation
// (its reconciliation state follows from them), assignment epochs and
// target; a tombstone when a member goes, and when the group does
// (store.go). What changed is found by comparing each member the step
// touched (every member, when the target was computed again) with what
// was last stored: a heartbeat that changes nothing writes nothing. A
// heartbeat that changes something is answered once its batch is durable
// (the high watermark passed it), as Kafka's runtime answers; a change
// nobody waits for (a session expired, a member fenced) is appended all
// the same.
//
// When a broker comes to lead a partition, its replay hands the groups
// to Load before the classic coordinator loads the partition's offsets:
// each group comes back at its epochs with its members, targets and
// static members, each member's session started afresh (Kafka gives
// loaded members a new session timeout) and its rebalance timeout running
// again if it must revoke partitions; the group's subscribed topics are
// compared at its next heartbeat with the hash stored, so the epoch moves
// only if they changed meanwhile. Members that keep heartbeating go on at
// the same epochs, without a rebalance. Unload forgets the groups of a
// partition no longer led here; their members are NOT_COORDINATOR there
// and find the new coordinator.
//
// Unlike Kafka's runtime, a change the store refuses or that is not
// replicated is not rolled back in memory: the heartbeat is answered the
// error (NOT_COORDINATOR, REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE),
// and a group whose partition moved is reloaded from what the log has by
// the new leader. What was not stored is tried again with the group's
// next change.
//
// # Classic members
//
// A consumer group may have members of the classic protocol, as Kafka's
// has during an online upgrade or downgrade (classic.go): FromClassic
// makes a classic group's members the classic members of a new consumer
// group, at the classic generation and with their classic assignments,
// when the first consumer-protocol member joins; their JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup (ClassicJoin, ClassicSync,
// ClassicHeartbeat, ClassicLeave) are answered from the target
// assignment, their assignment encoded in the ConsumerProtocol, their
// revocation a rejoin, their session their classic session timeout, and
// a rejoin or sync they owe is due within their rebalance timeout. They
// are stored with their classic metadata. ToClassic hands a group whose
// members are all classic back to the classic coordinator.
//
// # The most members a group may have
//
// group.consumer.max.size (WithMaxSize) counts a group's members of both
// protocols: a heartbeat or classic JoinGroup of a member the group does
// not have is GROUP_MAX_SIZE_REACHED once it has that many (Kafka's
// throwIfConsumerGroupIsFull), whatever its epoch; a leave is not
// checked. The broker does not convert a classic group with more members
// into a consumer group (server/group_types.go).
//
// # Not implemented
//
// Rack-aware assignment and the client-side assignors of KIP-848 are not
// served.
package consumergroup
