package sharestate

import "errors"

var (
	// ErrInvalidConfig is wrapped by Host for a ServiceConfig it cannot
	// run with.
	ErrInvalidConfig = errors.New("sharestate: invalid config")
	// ErrRecord is wrapped for a batch or record of __share_group_state
	// that is not one this package writes.
	ErrRecord = errors.New("sharestate: not a share-state record")
)
