package server

import "errors"

// The proxy's errors, checked with errors.Is.
var (
	// ErrUpstream is wrapped when a forwarded request could not be
	// answered upstream (the broker went away, timed out): the client's
	// connection is closed after the answers owed before it, as a broker
	// going away closes it, and the client retries.
	ErrUpstream = errors.New("proxy: upstream failed")

	// errConnClosed is why a request is not answered: its client left.
	errConnClosed = errors.New("proxy: client connection closed")
)
