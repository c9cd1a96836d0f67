package tail

import "errors"

// Why a tail stopped: Tail.Err wraps one of these (a fetch failure wraps
// the upstream package's error, or franz-go's kerr error the leader
// answered with).
var (
	// ErrIdle: no client fetch used the tail for tail.idle.ms.
	ErrIdle = errors.New("tail: idle")

	// ErrLeaderMoved: the metadata names another leader or leader epoch.
	ErrLeaderMoved = errors.New("tail: partition leadership moved")

	// ErrFetch wraps a failed fetch or a partition error from upstream.
	ErrFetch = errors.New("tail: upstream fetch failed")

	// ErrClosed: the Manager closed.
	ErrClosed = errors.New("tail: closed")

	// ErrInvalidOption is wrapped by New for an option out of range.
	ErrInvalidOption = errors.New("tail: invalid option")
)
