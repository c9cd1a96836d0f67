// Package replica is the broker's replica management (Kafka's
// ReplicaManager and the replica side of its Partition): the data path
// between the request handlers and the storage. Manager appends produces
// and reads fetches on the partitions this broker leads, holds what waits
// for them in its Fetch, Produce and DeleteRecords purgatories
// (delayed_fetch.go, delayed_produce.go, delayed_delete_records.go), keeps the leader's view of its followers, the ISR
// and the high watermark (Leaders), runs the follower's fetchers with
// their truncation by leader epoch (Fetcher), sends the AlterPartition a
// leader asks the active controller for, and makes the storage follow the
// metadata log (Manager.Apply). It maps the data path's errors to Kafka's
// codes (codes.go).
//
// The request handlers (package server) call it; it answers them through
// a Responder (a kafkanet.Request) and knows nothing of connections. It
// reads the image and reaches its peers through this broker's cluster
// membership (package cluster); Leaders, Fetcher and AlterPartition see
// the rest of the broker through small interfaces (LeaderEnv, FetcherEnv,
// ControllerEnv), which the Manager implements over it (env.go). replica
// imports storage, metadata, controller, cluster and quota (the
// replication throttles), never server.
//
// # Waiting
//
// Every wait of the data path is an operation in a purgatory, keyed by
// partition (TP). A fetch short of min_bytes waits in the Fetch purgatory
// (Kafka's DelayedFetch) until an append makes them readable, its
// max_wait_ms passes, or a partition can no longer be read; an acks=all
// produce, and a coordinator's append waiting for its replication
// (WatchHighWatermark), wait in the Produce purgatory (DelayedProduce)
// until the high watermark passes their batch; a DeleteRecords, once the
// leader moved its log start, waits in the DeleteRecords purgatory
// (DelayedDeleteRecords) until the low watermark, the smallest log start
// of the replicas on live brokers, reaches it. Wake checks them again
// after anything that can complete them: an append, the high watermark
// moving, a follower's log start rising, a leadership change, a deletion. A broker that stops leading a
// partition, or leads it at a new leader epoch, answers those waiting on
// it at once, NOT_LEADER_OR_FOLLOWER. An operation waiting on a client's
// behalf is submitted with its connection's context (Responder.Context):
// a client that goes away completes it at once.

// # The leader's view
//
// Leaders holds, for each partition this broker leads with followers, the
// followers' fetch states at the current leader epoch (Followers), made
// afresh at each new leader epoch with every follower caught up. Each
// follower's fetch reports its log end (FollowerFetched) and its log
// start (FollowerLogStart, for the low watermark); the high
// watermark is the smallest log end among the ISR and a follower whose
// addition is in flight, moved after each append (AfterAppend) and fetch.
// The ISR itself is the metadata log's: the leader asks the controller to
// change it (LeaderEnv.AskISR, which the Manager implements with
// AlterPartition), shrinking it when a follower has not caught up for
// replica.lag.time.max.ms (Shrink) and growing it when one has everything
// below the high watermark, one change in flight per partition, ended
// when the image shows the controller's decision, or by Followers.Done
// when the controller refused it or could not be reached (a follower
// being added counts for the high watermark until then: the ISR the
// controller committed, which may have made it the leader, already holds
// it).
//
// # The follower's fetcher
//
// Fetcher.Run fetches from one leader the partitions it leads of which
// this broker holds a replica, with Fetch requests carrying this broker's
// replica id, and appends the answers with the leader's offsets and
// epochs. Before it fetches a partition at a leader epoch, and after an
// OFFSET_OUT_OF_RANGE or a batch that does not follow on, it truncates the
// partition's log by leader epoch to where it agrees with the leader's
// (OffsetForLeaderEpoch, KIP-101 and KIP-279). An answer to a fetch made
// at an epoch the partition no longer has is dropped: the check and the
// append are one step under the partition's lock
// (storage.Partition.AppendReplicaAt), so that a leadership change
// landing between them cannot let a former leader's batches in.
//
// # Replication throttles
//
// A topic's leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name the replicas this broker's
// replication quotas (quota.Replication) throttle, as Kafka's
// ReplicaManager and ReplicaFetcherThread do (throttle.go): the leader
// answers a throttled follower out of the ISR no records while its rate
// is over, and the follower leaves such a partition out of its fetch while
// its own is. An in-sync replica is never throttled.
//
// # Goroutines
//
// The package starts none of its own; it runs on these:
//
//   - the request handlers' (connections' readers): Append, Fetch,
//     AwaitReplication, and Leaders.FollowerFetched for a follower's
//     fetch;
//   - whichever goroutine completes a delayed operation (an appender's,
//     the purgatory's timer, a closing connection's): OnComplete reads the
//     logs and answers;
//   - the metadata log's apply goroutine: Apply, which calls Wake and
//     Leaders.AfterAppend;
//   - in a cluster, goroutines of cluster.Member's (Member.Go, stopped by
//     its Close) that Start starts: Fetcher.Run, one per other broker;
//     the ISR check, Leaders.Shrink every replica.lag.time.max.ms / 2;
//     and, for each ISR change LeaderEnv.AskISR sends, AlterPartition,
//     which then calls Followers.Done if the change was not committed.
//
// # Lock order
//
// An operation's lock (around TryComplete, which reads the logs and the
// image), then Leaders.mu, then a Followers' mu, then the storage
// Partition's lock (taken inside its methods). LeaderEnv.AskISR is
// called with a Followers' mu held: it starts the request and returns,
// and must not call back into Leaders or Followers. The Fetcher holds no
// lock of its own. The replication quotas' locks (quota.Replication)
// are leaves: a delayed fetch's TryComplete measures the leader quota
// under its operation's lock, and nothing is taken under them. No
// purgatory is called with any of these held: Wake
// runs after the call that moved a partition returns. The metadata log's
// lock (metalog.Log.mu) comes before all of them: Apply runs under it.
package replica
