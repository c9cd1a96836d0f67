package replica

import "errors"

// The data path's errors, checked with errors.Is; ErrorCode maps them.
var (
	// ErrNotLeader is wrapped when this broker does not lead a partition
	// a client asked for (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("not the leader")
	// ErrNotEnoughReplicas is wrapped for an acks=all produce to a
	// partition whose ISR is below min.insync.replicas
	// (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")
)
