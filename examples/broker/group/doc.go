// Package group is the broker's consumer group coordinator for the classic
// rebalance protocol (Apache Kafka's GroupCoordinator): JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, committed offsets, and the
// administration of groups. It knows nothing of the wire: package server
// decodes requests, calls the Coordinator and encodes what it answers.
//
// # States
//
// A group moves through Kafka's states:
//
//   - Empty → PreparingRebalance: a member joins.
//   - PreparingRebalance → CompletingRebalance: every member has rejoined,
//     or the rebalance timeout has passed and those that did not are
//     removed; → Empty if nobody is left.
//   - CompletingRebalance → Stable: the leader's SyncGroup brings the
//     assignment.
//   - Stable, CompletingRebalance → PreparingRebalance: a member joins,
//     leaves, changes its metadata or lets its session expire; the leader
//     rejoins; a member fails to send its SyncGroup in time.
//
// An Empty group becomes Dead when it is deleted, or when its offsets have
// all expired. Each rebalance ends a generation: the coordinator picks the
// protocol (the assignor) every member supports, by a vote of the members'
// preferences as Kafka does, elects a leader, answers every waiting JoinGroup
// (the leader with every member's metadata) and waits for the leader's
// SyncGroup, which brings each member's assignment. The assignors (range,
// round-robin, sticky, cooperative-sticky) run in the clients; the
// coordinator only carries their bytes.
//
// Members are dynamic, or static (group.instance.id, KIP-345): a known
// instance that joins again replaces its old member id, without a rebalance
// when the group is Stable and the chosen protocol does not change, and
// requests carrying the old id are fenced (FENCED_INSTANCE_ID). A dynamic
// member's first JoinGroup from v4 is answered MEMBER_ID_REQUIRED with its
// id (KIP-394); it is a pending member until it joins with it.
//
// # Every wait is an operation in a purgatory
//
//   - Rebalance purgatory: the group's delayed join (Kafka's DelayedJoin,
//     and InitialDelayedJoin for an Empty group, which waits
//     group.initial.rebalance.delay.ms for more members), keyed by group;
//     each waiting JoinGroup, keyed by member, which the delayed join's
//     completion answers and which the server ties to the request's
//     connection (see Waiter); and the wait for every member's SyncGroup
//     after a rebalance (Kafka's DelayedSync), keyed by group.
//   - Heartbeat purgatory: each member's session (Kafka's DelayedHeartbeat),
//     keyed by member. A heartbeat, a JoinGroup, a SyncGroup or an offset
//     commit completes the pending one and submits the next; its expiry
//     removes the member and starts a rebalance.
//   - OffsetExpiration purgatory: one operation per Empty group, due when
//     its earliest committed offset passes offsets.retention.minutes (Kafka
//     sweeps every offsets.retention.check.interval.ms instead); none for
//     a group another protocol holds (a KIP-848 consumer group with
//     members, whose offsets it keeps: held.go).
//
// A follower's SyncGroup waits for the leader's as in Kafka: its response
// callback is parked on the member, no goroutine blocks, and every path
// that ends the wait (the leader's assignment, a new rebalance, the
// member's removal or fencing, Close) answers it exactly once.
//
// The purgatories share one timer on the coordinator's clock; with a
// *timer.ManualClock (WithClock) every expiration runs inside
// ManualClock.Advance, so tests are deterministic.
//
// # Lock order
//
// A group's mutex is the lock of every operation of that group
// (State.ShareLock), as Kafka shares the group lock: TryComplete runs with
// it held. Then Coordinator.mu (the map of groups and the index of the
// groups with a transaction's offsets pending, by producer), a leaf. OnComplete and
// OnExpiration run with no lock held and take the group's mutex themselves.
// Go's mutexes are not reentrant, so nothing holding a group's mutex calls
// into a purgatory (CheckAndComplete, TryCompleteElseWatch) or answers a
// request: a section under the lock records what it leaves to do (an
// after), and that runs once the lock is released. The OffsetStore is
// called with a group's mutex held, and its own locks are leaves below
// it; its Pending and its done callback run with no group's mutex held.
//
// # Persistence and placement
//
// With an OffsetStore (WithOffsetStore; the broker's appends to
// __consumer_offsets) committed offsets outlive the coordinator. Every
// commit, transactional commit, offset deletion, expiry and group
// deletion is handed to the store under the group's mutex, in the order
// it happens; the store only
// appends, quickly. A deletion takes effect once appended (a refusal
// answers NOT_COORDINATOR, as Kafka answers when it cannot append to
// __consumer_offsets; an expiry the store refuses is logged, and the
// offsets expire again after the next load). A commit is pending until the
// store says it is durable (Pending, called with no lock held): only then
// is it answered and visible to FetchOffsets, and a later commit of the
// same partition made durable first, or a deletion appended after it,
// wins, as a replay of the log would have it (Kafka's pending offset
// commits). The store keeps wall-clock times (WithWallClock), converted
// from and to the coordinator's clock.
//
// The group's metadata is stored too (OffsetStore.Group, Kafka's
// storeGroup): when a rebalance completes, with the generation, protocol,
// leader and every member with its subscription and assignment, and the
// SyncGroups are answered only once it is durable (a failure answers them
// the store's error, as Kafka maps it, and the group rebalances); when
// the group becomes Empty; when a static member rejoins a Stable group
// under a new member id.
//
// A coordinator serves the groups it owns (WithOwner: in the broker, the
// groups of the offsets partitions it leads and has loaded). Load brings
// back a partition's groups with their offsets. A group stored with
// members comes back Stable, with its generation, protocol, leader,
// members (static ones with their instance ids) and assignments, each
// member's session started afresh, as Kafka's loadGroupsForPartition
// does: members that go on heartbeating go on without a rebalance when
// their coordinator moves; those that do not expire, and the group
// rebalances. A group stored Empty comes back Empty since the load: a
// consumer group's offsets expire offsets.retention.minutes after it, a
// simple consumer's after their commit, an explicit retention at its
// wall-clock deadline. Unload forgets a partition's groups and answers
// their waiting JoinGroups and SyncGroups NOT_COORDINATOR.
//
// # Transactions
//
// A transactional producer commits its consumer's offsets in its
// transaction (TxnCommitOffsets, KIP-98): they are appended as the
// producer's (OffsetStore.TxnCommit: a transactional batch of its id and
// epoch), answered once durable as a commit is, and then pending in the
// group, by producer id (Kafka's pendingTransactionalOffsetCommits), not
// visible to FetchOffsets, until the transaction coordinator writes the
// transaction's marker to the group's partition and WriteTxnMarkers calls
// CompleteTxn: a commit makes them the committed offsets, an abort drops
// them. Every commit, transactional or not, takes its place in its
// group's order as its record does in the log, and a committed
// transaction's offset replaces the committed one only if its record is
// the newer (Kafka's completePendingTxnOffsetCommit): a commit made after
// the transaction's and before its marker wins.
//
// A fetch that requires stable offsets (OffsetFetch v7+, KIP-447) is
// answered UNSTABLE_OFFSET_COMMIT for a partition with a commit pending,
// a transaction's or one waiting to be durable, as Kafka 3's
// hasPendingOffsetCommitsForTopicPartition answers, so that a consumer
// taking a partition over does not start from an offset an open
// transaction is about to replace. From v3 a TxnOffsetCommit carries the
// member, its instance and its generation, checked as a commit's
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), so that a
// zombie producer's offsets are fenced by the group's rebalance; without
// them any group takes it, and a group that does not exist is created
// Empty, as Kafka does.
//
// Pending offsets hold back the expiry of their partitions' offsets, and
// an Empty group with any is not deleted for want of offsets (Kafka's
// cleanupExpiredOffsets); a deletion (OffsetDelete, DeleteGroups, which
// deletes an Empty group whatever its transactions, as Kafka does) drops
// them with its tombstone. Unload drops them with their groups: the new
// coordinator loads them back pending, ordered against the committed
// offsets by their records' positions (StoredOffset.Position), and its
// CompleteTxn completes them when the marker comes. The caller calls
// CompleteTxn for a partition that is loaded: a marker appended while the
// partition loads must wait for the load.
//
// # Conversion to and from a consumer group
//
// A classic group with members of protocol type "consumer" hands them to
// the KIP-848 coordinator when a consumer-protocol member joins
// (ConvertToConsumer, Kafka's online upgrade): their waiting JoinGroup
// and SyncGroup are answered REBALANCE_IN_PROGRESS and the group goes
// Empty, keeping the offsets. FromConsumer takes them back when the
// consumer group has classic members alone (the downgrade): Stable at
// their generation, then rebalancing, as Kafka's fromConsumerGroup
// (convert.go).
//
// # Size
//
// About 3.8k lines, above the 3k this project's packages keep to: Kafka's
// classic protocol is one state machine under one lock per group (joins,
// syncs, sessions, offsets, transactions' offsets, administration, what is
// stored), a file each.
// Its hosting on __consumer_offsets is package group/service's, and the
// KIP-848 and share protocols would be coordinators of their own beside
// it.
//
// # The most members a group may have
//
// group.max.size (WithMaxSize) bounds a group's members as Kafka's
// acceptJoiningMember does: a JoinGroup that would pass it is
// GROUP_MAX_SIZE_REACHED. While a group rebalances, the members that have
// rejoined are counted rather than its members, so a group loaded with
// more members than a lowered limit, which rebalances at once, keeps the
// first to rejoin and refuses (and removes) the rest.
//
// # Not implemented
//
// The expiry of a Stable consumer group's offsets for topics it no longer
// subscribes to. A transactional commit is not
// checked against its transaction (that the producer added the group with
// AddOffsetsToTxn: Kafka 3.6+ asks the transaction coordinator, KIP-890);
// for TxnOffsetCommit v5 (KIP-890 part 2) the handler adds the group's
// partition to the transaction before the commit reaches this package.
package group
