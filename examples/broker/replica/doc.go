// Package replica is the broker's replica management (Kafka's
// ReplicaManager and the replica side of its Partition): the leader's
// view of its followers, the ISR and the high watermark; the follower's
// fetcher with its truncation by leader epoch; and the AlterPartition a
// leader sends the active controller. Package server keeps the request
// handlers and wires this package in, through small interfaces
// (LeaderEnv, FetcherEnv, ControllerEnv) rather than the server itself:
// replica imports storage, metadata and controller, never server.
//
// # The leader's view
//
// Leaders holds, for each partition this broker leads with followers, the
// followers' fetch states at the current leader epoch (Followers), made
// afresh at each new leader epoch with every follower caught up. Each
// follower's fetch reports its log end (FollowerFetched); the high
// watermark is the smallest log end among the ISR and a follower whose
// addition is in flight, moved after each append (AfterAppend) and fetch.
// The ISR itself is the metadata log's: the leader asks the controller to
// change it (LeaderEnv.AskISR, which the broker implements with
// AlterPartition), shrinking it when a follower has not caught up for
// replica.lag.time.max.ms (Shrink) and growing it when one has everything
// below the high watermark, one change in flight per partition, ended by
// Followers.Done.
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
// # Goroutines
//
// The package starts none of its own; the broker runs its methods:
//
//   - Fetcher.Run, on one goroutine per other broker, until its context
//     is done;
//   - Leaders.Shrink, on the broker's ISR check, every
//     replica.lag.time.max.ms / 2;
//   - AlterPartition, on a goroutine the broker starts for each ISR
//     change LeaderEnv.AskISR sends, which then calls Followers.Done;
//   - Leaders.FollowerFetched, EnoughReplicas and AfterAppend, on the
//     request handlers' goroutines (a follower's Fetch, a Produce), on
//     whichever goroutine completes a delayed produce (EnoughReplicas),
//     and on the metadata log's apply goroutine (AfterAppend, when a
//     record changes a partition).
//
// # Lock order
//
// Leaders.mu, then a Followers' mu, then the storage Partition's lock
// (taken inside its methods). LeaderEnv.AskISR is called with a
// Followers' mu held: it starts the request and returns, and must not
// call back into Leaders or Followers. The Fetcher holds no lock of its
// own. No purgatory is called with any of these held: the caller wakes
// what waits on a partition after the call returns.
package replica
