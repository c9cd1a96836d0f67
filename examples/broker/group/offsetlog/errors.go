package offsetlog

import "errors"

// The errors of the package, checked with errors.Is. A batch found corrupt
// on replay wraps storage.ErrCorruptBatch instead.
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("offsetlog: closed")

	// ErrInvalidOption is wrapped by Open for an option out of range.
	ErrInvalidOption = errors.New("offsetlog: invalid option")
)
