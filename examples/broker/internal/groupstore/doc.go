// Package groupstore is what the group coordinator's two stores of
// membership share, the KIP-848 consumer groups' (package consumergroup)
// and the KIP-932 share groups' (package sharegroup): the shape of one
// step's change of a group as it is appended to __consumer_offsets, the
// wait for it to be durable, and the error a client is answered when it
// is not, as Kafka's group coordinator shards share one runtime and one
// mapping of its write errors (GroupCoordinatorService's
// handleOperationException).
//
// # Promises
//
// A Change is whole: its records are appended as one batch, so a replay
// sees all of it or none. A Pending is called once and calls its done
// exactly once. Error never answers a write's own REQUEST_TIMED_OUT,
// which would end a kgo member's join for good.
package groupstore
