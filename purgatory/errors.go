package purgatory

import (
	"errors"

	"github.com/gopurgatory/purgatory/operation"
)

var (
	// ErrClosed is returned by TryCompleteElseWatch after Close.
	ErrClosed = errors.New("purgatory: closed")

	// ErrNoKeys is returned by TryCompleteElseWatch when given no key:
	// nothing could ever complete the operation early.
	ErrNoKeys = errors.New("purgatory: an operation needs at least one watch key")

	// ErrSubmitted is returned when an operation is submitted twice.
	ErrSubmitted = operation.ErrSubmitted

	// ErrInvalidConfig is wrapped by New when an option is out of range.
	ErrInvalidConfig = errors.New("purgatory: invalid configuration")
)
