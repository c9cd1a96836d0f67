package server

import "errors"

// The proxy's errors, checked with errors.Is.
var (
	// ErrUpstream is wrapped when a forwarded request could not be
	// answered upstream (the broker went away, timed out): the client's
	// connection is closed after the answers owed before it, as a broker
	// going away closes it, and the client retries.
	ErrUpstream = errors.New("proxy: upstream failed")

	// ErrUnchecked is why a client's request is refused when
	// authorization is on and the proxy has no check for its API: it is
	// never forwarded unchecked, and the connection is closed.
	ErrUnchecked = errors.New("proxy: no authorization check for this API")

	// errConnClosed is why a request is not answered: its client left.
	errConnClosed = errors.New("proxy: client connection closed")
)
