package operation

import "errors"

// ErrSubmitted is returned when an operation that was submitted once is
// submitted again: an operation is answered once, so it is used once.
var ErrSubmitted = errors.New("operation: already submitted")
