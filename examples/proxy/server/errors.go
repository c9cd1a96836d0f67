package server

import "errors"

// The proxy's errors, checked with errors.Is.
var (
	// ErrBadRequest is wrapped when a request cannot be read or is not
	// served: the connection is closed, as Kafka closes it.
	ErrBadRequest = errors.New("proxy: bad request")

	// ErrUpstream is wrapped when a forwarded request could not be
	// answered upstream (the broker went away, timed out): the client's
	// connection is closed after the answers owed before it, as a broker
	// going away closes it, and the client retries.
	ErrUpstream = errors.New("proxy: upstream failed")

	// errConnClosed is why a request is not answered: its client left.
	errConnClosed = errors.New("proxy: client connection closed")
)
