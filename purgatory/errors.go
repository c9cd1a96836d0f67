package purgatory

import (
	"errors"

	"github.com/gopurgatory/purgatory/operation"
)

var (
	// ErrClosed is returned by TryCompleteElseWatch (and Await) after
	// Close. Like every error of a submission, it means the operation was
	// not taken: its OnComplete will not run, the caller answers it.
	ErrClosed = errors.New("purgatory: closed")

	// ErrNoKeys is returned by TryCompleteElseWatch when given no key:
	// nothing could ever complete the operation early.
	ErrNoKeys = errors.New("purgatory: an operation needs at least one watch key")

	// ErrTooManyKeys is returned by TryCompleteElseWatch given more keys than
	// an operation can be watched under (2^32-1).
	ErrTooManyKeys = errors.New("purgatory: too many watch keys")

	// ErrSubmitted is returned when an operation is submitted twice.
	ErrSubmitted = operation.ErrSubmitted

	// ErrInvalidConfig is wrapped by New when an option is out of range.
	ErrInvalidConfig = errors.New("purgatory: invalid configuration")
)
