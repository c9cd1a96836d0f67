package operation

import "github.com/gopurgatory/purgatory/internal/lifecycle"

// ErrSubmitted is returned when an operation that was submitted once is
// submitted again: an operation is answered once, so it is used once.
var ErrSubmitted = lifecycle.ErrSubmitted
