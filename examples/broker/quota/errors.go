package quota

import "errors"

// ErrInvalidConfig is wrapped by New's error for options out of range.
var ErrInvalidConfig = errors.New("quota: invalid configuration")
