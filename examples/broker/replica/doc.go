// Package replica is the broker's replica management (Kafka's
// ReplicaManager and the replica side of its Partition): the leader's
// view of its followers, the ISR and the high watermark, and the
// follower's fetcher with its truncation by leader epoch.
//
// # The leader's view
//
// Leaders holds, for each partition this broker leads with followers, the
// followers' fetch states at the current leader epoch (Followers). Each
// follower's fetch reports its log end (FollowerFetched); the high
// watermark is the smallest log end among the ISR, moved after every
// append (AfterAppend) and fetch; the ISR shrinks (Shrink) and grows
// through AlterPartition requests the broker sends the controller for it
// (LeaderEnv.AskISR), one in flight per partition.
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
// between them cannot let a former leader's batches in.
//
// # Lock order
//
// Leaders.mu, then a Followers' mu, then the storage Partition's lock
// (taken inside its methods). LeaderEnv.AskISR is called with a
// Followers' mu held and must not call back into it; no purgatory is
// called with any of these held: the caller wakes what waits on a
// partition after the call returns.
package replica
