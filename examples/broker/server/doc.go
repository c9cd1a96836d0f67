// Package server is a Kafka-protocol broker built on the purgatory: every
// request that has to wait (a long-poll fetch, an acks=all produce, a group
// join, a member's session) waits as an operation in a purgatory, not in a
// sleeping goroutine or a per-request timer.
//
// This package is the broker's request handlers (Kafka's KafkaApis), one
// file per API, their dispatch, and the wiring of the broker's roles from
// its Config (server.go); the roles are packages of their own, which the
// handlers call and which never import this one:
//
//   - package kafkanet, the network layer shared with the proxy: the
//     listener, the connections, framing and budgets;
//   - package replica, replica management (Kafka's ReplicaManager): the
//     data path, its Fetch, Produce and DeleteRecords purgatories,
//     replication;
//   - package coordinator, the coordinator runtime, which hosts the group
//     coordinator (package group, through group/service) on
//     __consumer_offsets and the transaction coordinator (package txn) on
//     __transaction_state, whose markers this package writes (txns.go);
//   - package cluster, this broker's membership in its cluster: the
//     metadata log (package metalog) it applies, the controller (package
//     controller), its peers and heartbeat;
//   - package storage (and storage/logdir), the topics, partitions and
//     their logs;
//   - packages share and sharegroup, the share groups of KIP-932: the
//     share partitions' records in flight and their acquisition locks,
//     and the groups' membership; this package keeps their sessions and
//     the ShareFetch purgatory (share.go);
//   - package sharestate, the share coordinator, which keeps the share
//     partitions' state in __share_group_state (share_state.go).
//
// # Requests
//
// The connections are the network layer's: each has a reader goroutine,
// which reads frames (bounded by socket.request.max.bytes), decodes them
// with franz-go's kmsg and hands them to this package's dispatch
// (dispatch.go), and a writer goroutine, which writes the answers strictly
// in request order. Requests are pipelined: the reader does not wait for
// an answer before reading the next request, up to
// queued.max.requests.per.connection requests ahead. A handler never
// blocks: it answers at once, or submits an operation whose OnComplete
// answers later. One file per API, named by key (00_produce.go,
// 01_fetch.go, ...), each opening with the versions it serves.
//
// An ApiVersions request newer than the broker is answered in v0 with
// UNSUPPORTED_VERSION and the supported ranges, as Kafka does; any other
// unknown API, unsupported version or malformed request closes the
// connection with a log line, as Kafka does.
//
// # Waiting
//
// An operation waiting on behalf of a connection is submitted with the
// connection's context (TryCompleteElseWatchContext): when the client goes
// away, the connection cancels it and the operation completes at once, so
// nothing is left behind in a purgatory.
//
// # Data
//
// Topics, partitions and their logs live in package storage. Produce
// appends through replica management (replica.Manager.Append), which then
// checks the fetches and produces waiting on the partition
// (CheckAndComplete, with no lock held); a waiting fetch reads the logs
// again when it completes (replica.Manager.Fetch). An acks=all produce
// waits until the partition's high watermark passes its batch, which on
// one broker is at once.
//
// # Replication
//
// With --cluster, brokers form a cluster (package cluster) whose metadata
// is the log of a Raft quorum every broker votes in (package metalog),
// applied to the storage by package replica and served by Metadata. The
// quorum's leader is the active controller (package controller): it
// creates topics, fences a broker whose heartbeats stop, and elects new
// leaders from the ISR with a bumped leader epoch. Replica management is
// package replica's: followers fetch from the leader the image names,
// with the Fetch protocol and their replica id (replica.Fetcher, one
// goroutine per other broker), after truncating their logs by leader
// epoch to where they agree with the leader's (OffsetForLeaderEpoch,
// 23_offset_for_leader_epoch.go), and drop an answer to a fetch made at a
// leader epoch that has since moved; the leader keeps each follower's
// fetch position (replica.Leaders, fed by Fetch and Produce), asks the
// controller to change the ISR (replica.AlterPartition) and moves the
// high watermark to the ISR's smallest log end, which completes the
// acks=all produces and the consumers' fetches waiting on it. A broker
// that stops leading a partition answers those waiting on it at once,
// NOT_LEADER_OR_FOLLOWER. A group is coordinated by the leader of its
// partition of __consumer_offsets (package coordinator), and moves with
// it; the leader keeps the partition bounded by rewriting its live
// records and moving its log start past the dead ones, and followers
// follow the leader's log start.
//
// # Durability
//
// Without log.dirs everything is in memory and gone when the broker
// stops. With it (one directory), the broker keeps there, and finds again
// when it starts: each partition's batches in segment files with offset
// indexes (package logdir: log.segment.bytes, log.roll.ms,
// log.index.interval.bytes), checked batch by batch and cut at a torn tail
// only after an unclean shutdown and past the partition's recovery point;
// the topics with their ids, partition counts and configs; the producer
// ids handed out, in blocks, so none is handed out twice; the cluster id;
// and, in the partitions of __consumer_offsets, the groups' committed
// offsets, loaded again when the broker leads them. A partition's
// high watermark is its recovered log end, and its idempotent producers'
// sequences are rebuilt from its batches, so a retry of a batch
// acknowledged before the restart is answered with its first offset.
// Group members are not kept: they rejoin. A log dir that cannot be
// recovered (a corrupt batch no crash explains, a missing segment, any bad
// batch after a clean shutdown, which the log dir records as Kafka does
// with .kafka_cleanshutdown) stops the broker from starting, with the
// file, position and offset in the error.
//
// What survives what: a batch is in the OS page cache before its produce
// is answered, with any acks, so every acknowledged batch survives the
// broker's process dying, kill -9 included. It survives a power loss or a
// kernel crash only once fsynced: before the answer with
// log.flush.interval.messages=1, within log.flush.interval.ms otherwise.
// Both default to never, as in Kafka, which relies on replicas rather than
// fsync; a single broker has none, so where power losses matter, set
// log.flush.interval.messages=1 and pay an fsync per produce. The high
// watermark is not checkpointed: a restarted leader takes its log end,
// which may run ahead of its followers until they fetch.
//
// # Authorization
//
// With authorizer.class.name set, every request is checked, as Kafka's
// KafkaApis checks it, against the ACL bindings of the metadata log
// (package acl, Kafka's StandardAuthorizer), for its principal (the
// network layer's: User:ANONYMOUS, a certificate's subject, a SASL user)
// and its client's address; super.users may do everything, and
// allow.everyone.if.no.acl.found opens what no binding applies to.
// authz.go holds the table of every API's operation, resource and
// refusal code: checks on a whole request run before its handler and any
// routing, checks per topic, group or transactional id in the handlers.
// CreateAcls, DescribeAcls and DeleteAcls (29-31) manage the bindings;
// the active controller commits them, and a broker that is not it
// forwards CreateAcls and DeleteAcls to it. Without an authorizer every
// check is free and allows.
//
// # Limits
//
// No client can crash the broker or grow it past its budgets. The network
// layer (package kafkanet) bounds connections (max.connections,
// max.connections.per.ip), retries accept errors, reads request bodies
// into buffers that grow as bytes arrive under queued.max.request.bytes,
// of which one connection and one client address may hold only a share
// in requests still arriving (queued.max.request.bytes.per.connection,
// .per.ip), closes a connection whose request has not arrived whole
// within socket.read.timeout.ms of its first byte, and bounds decodes;
// this package plans file descriptors from RLIMIT_NOFILE (limits.go:
// max.connections, and max.broker.partitions with log.dirs), cuts error
// messages and checks strings against Kafka's limits (names.go), and
// replica management caps fetch responses (fetch.max.bytes). Every refusal is counted in
// broker_refusals_total by reason (refusals.go has the handlers' own) and
// logged at most once a minute per client host and reason.
//
// # Size
//
// About 4.6k lines of code, above the 3k this project's packages keep to:
// two thirds of them the handlers (one file per API, as franz-go's kfake)
// and their helpers (dispatch, routing of group requests, string checks,
// error codes, authorization); the rest the broker's Config, a field and a
// flag per Kafka config, and New, which wires the roles above from it.
// Splitting the handlers would cut KafkaApis in two for no reader's
// benefit, and their authorization is theirs as it is KafkaApis'.
//
// # Goroutines
//
// This package starts none of its own: a handler runs on its
// connection's reader goroutine (package kafkanet), and what it leaves
// waiting is answered on whichever goroutine completes the operation. A
// request to another broker (a transaction's WriteTxnMarkers, a produce's
// KIP-890 check at a remote coordinator) runs on a goroutine of the
// membership's (cluster.Member.Go), and what waits on it is answered
// there. The roles' goroutines are in their packages' docs.
//
// # Lock order
//
// An operation's lock, then the broker's data locks (replica's leaders,
// then a partition's; the coordinator runtime's topic, then a group's,
// then a state partition's compaction, then that partition's), then a
// connection's lock (kafkanet's); a connection's lock is never held while
// calling out. Purgatory callbacks run with no purgatory lock held, and
// nothing calls CheckAndComplete with a lock held. The peers' goroutines
// (fetchers, heartbeat, ISR check, AlterPartition) take no lock across a
// request to another broker. The metadata log applies records under its
// own lock (metalog.Log.mu), which comes before all of the above:
// applying takes the storage's locks and calls CheckAndComplete, and
// nothing holding a broker lock waits for the log. The authorizer's lock
// (package acl's writers') is taken only there, under metalog.Log.mu,
// and held across no call out; its checks take no lock.
package server
