package metalog

import "errors"

var (
	// ErrNotLeader is returned by Propose on a broker that is not the
	// quorum's leader (Kafka's NOT_CONTROLLER).
	ErrNotLeader = errors.New("metalog: not the leader")
	// ErrClosed is returned by Propose after Close.
	ErrClosed = errors.New("metalog: closed")
)
