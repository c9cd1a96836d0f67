package upstream

import "errors"

// The errors of the package, checked with errors.Is.
var (
	// ErrClosed is the error of requests sent to, or still waiting on, a
	// closed Conn, Session or Cluster.
	ErrClosed = errors.New("upstream: closed")

	// ErrTimeout is wrapped when a request was not answered within its
	// timeout: the connection is closed, and every request on it fails.
	ErrTimeout = errors.New("upstream: request timed out")

	// ErrUnknownBroker is wrapped when a request names a broker the
	// metadata does not list.
	ErrUnknownBroker = errors.New("upstream: unknown broker")

	// ErrBackoff is wrapped when a broker's address failed to dial
	// recently: the request fails without dialling again.
	ErrBackoff = errors.New("upstream: broker unreachable, backing off")

	// ErrProtocol is wrapped when a broker answers out of order or with a
	// frame that cannot be read: the connection is closed.
	ErrProtocol = errors.New("upstream: protocol error")

	// ErrNoVersions is wrapped when no broker could be asked its API
	// versions.
	ErrNoVersions = errors.New("upstream: api versions unknown")

	// ErrInvalidOption is wrapped by New for an option out of range.
	ErrInvalidOption = errors.New("upstream: invalid option")
)

// errDial is wrapped by a failed dial, for the failure metric's reason.
var errDial = errors.New("upstream: dial failed")
