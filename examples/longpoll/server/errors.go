package server

import "errors"

var (
	// ErrInvalidConfig is wrapped by New when a setting is out of range.
	ErrInvalidConfig = errors.New("longpoll: invalid configuration")

	// errTooManyKeys refuses a POST that would store a key past
	// Config.MaxKeys (answered 507).
	errTooManyKeys = errors.New("longpoll: too many keys")
)
