// Package replica is the broker's replica management (Kafka's
// ReplicaManager and the replica side of its Partition): the leader's
// view of its followers, the ISR and the high watermark.
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
// # Lock order
//
// Leaders.mu, then a Followers' mu, then the storage Partition's lock
// (taken inside its methods). LeaderEnv.AskISR is called with a
// Followers' mu held and must not call back into it; no purgatory is
// called with any of these held: the caller wakes what waits on a
// partition after the call returns.
package replica
